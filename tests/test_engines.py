"""The fully-asynchronous fast path (rust/rollsim-core/src/pipeline/fully_async.rs) and the general
streaming engine (pipeline/streaming.rs) are two implementations of the chapter's rules: on every
scenario both can run they must give the same frames, value for value."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollsim import FullyAsync, simulate
from rollsim.simulation import _simulate
from strategies import every_field_scenarios

pytestmark = [pytest.mark.filterwarnings("ignore::rollsim.GenerationOutrunsTrainingWarning"),
              pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning"),  # random scenarios: some end before a step
              pytest.mark.filterwarnings("ignore::rollsim.StalenessCapLivelockWarning")]  # or cap below their cadence

chapter_pipelines = st.builds(FullyAsync, max_staleness=st.one_of(st.none(), st.integers(0, 4)))


@settings(max_examples=80)
@given(every_field_scenarios(pipeline=chapter_pipelines))
def test_fast_path_equals_general_engine(sc):
    # every field of the engine's schema is set by the strategy (tests/test_schema.py checks it): a
    # field the fast path ignored would make it disagree with the general engine
    fast = simulate(sc)
    general = _simulate(sc, general_engine=True)
    assert fast.samples.equals(general.samples, null_equal=True)
    assert fast.segments.equals(general.segments)
    assert fast.steps.equals(general.steps)
    for k, v in fast.summary.items():
        w = general.summary[k]
        if isinstance(v, float):
            # sums of the same terms in another order (tokens_pending) may differ in the last bits
            assert (math.isnan(v) and math.isnan(w)) or v == pytest.approx(w, rel=1e-12, abs=1e-9), k
        else:
            assert v == w, k


def test_chapter_rows_from_the_general_engine():
    from rollsim import Scenario

    for cap, steps, dropped in ((None, 34, 0), (2, 33, 358)):
        s = _simulate(Scenario(rng="python", pipeline=FullyAsync(cap)), general_engine=True).summary
        assert (s["steps"], s["samples_dropped"]) == (steps, dropped)
