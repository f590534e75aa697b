"""rng="fast" against rng="python": different streams, same distribution. Means over 300 seeds must
agree within 4 standard errors (combined), i.e. a false alarm rate below 1e-4 per metric."""

import math

import numpy as np
import pytest

from rollsim import FullyAsync, OneStepAsync, Scenario, Synchronous, simulate

N = 300


def means(sc, rng, metric):
    xs = np.array([simulate(sc.replace(seed=s, rng=rng), record="summary").summary[metric] for s in range(N)])
    return xs.mean(), xs.std(ddof=1) / math.sqrt(N)


@pytest.mark.parametrize("pipeline,metric", [
    (FullyAsync(), "staleness_mean"),
    (FullyAsync(), "staleness_mean_long"),
    (FullyAsync(max_staleness=1), "drop_fraction"),
    (Synchronous(), "rollout_utilization"),
    (OneStepAsync(), "end_s"),
])
def test_fast_and_python_means_agree(pipeline, metric):
    sc = Scenario(pipeline=pipeline, horizon_s=3600.0)
    m1, se1 = means(sc, "fast", metric)
    m2, se2 = means(sc, "python", metric)
    assert abs(m1 - m2) <= 4 * math.hypot(se1, se2), (m1, m2, se1, se2)
    assert se1 > 0 and se2 > 0


@pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")  # draws only: no step needed
def test_fast_lognormal_draws_match_the_distribution():
    """The fast sampler's lengths have the lognormal's median and truncated mean (200k draws)."""
    sc = Scenario(rollout_slots=2000, batch_size=10**6, horizon_s=12000.0, rng="fast")
    x = simulate(sc).samples["length_tokens"].to_numpy()
    assert x.size > 100_000
    assert abs(np.median(x) - math.exp(7.6)) / math.exp(7.6) < 0.02
    assert abs(x.mean() - sc.lengths.mean_tokens()) / sc.lengths.mean_tokens() < 0.02
    assert x.max() <= 16384.0
