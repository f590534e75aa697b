"""Summary-mode sweeps of agentic scenarios: the agentic summary values reach ``simulate_many``'s
columns and ``rollsim.sweep`` frames, equal to a single run's; 0 for counts and NaN otherwise when a
scenario is not agentic."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rollsim
from rollsim import _rollsim
from rollsim.agentic import Agentic
from rollsim.sweeps import SUMMARY_SCHEMA
from test_agentic_kv import TIGHT

# the column checks run a few trajectories for less than a training step on purpose
pytestmark = pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")

AGENTIC = [c["name"] for c in _rollsim.SCHEMA["agentic_summary"]]
AGENT = Agentic(max_turns=6, tool_latency_s=5.0, observation_tokens=100.0, env_slots=8,
                max_context_tokens=20_000.0)


def _same(a: object, b: object) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def test_schema_lists_the_agentic_summary() -> None:
    s = rollsim.simulate(TIGHT.replace(agentic=AGENT, horizon_s=600.0), record="summary").summary
    assert AGENTIC == ["turns", "tool_calls", "tool_retries", "trajectories_truncated", "trajectories_failed",
                       "tokens_observed", "tokens_prefilled_turns", "env_busy_s", "env_wait_s", "env_utilization",
                       "env_mean_busy", "gpu_hold_s", "gpu_prefill_s", "gpu_decode_s", "kv_evictions"]
    assert set(AGENTIC) <= set(s) and set(AGENTIC) <= set(SUMMARY_SCHEMA)


def test_simulate_many_has_the_agentic_columns() -> None:
    agentic = TIGHT.replace(agentic=AGENT, horizon_s=600.0)
    plain = TIGHT.replace(horizon_s=600.0)
    out = _rollsim.simulate_many([agentic.to_dict(), plain.to_dict()], np.array([0, 0, 1]),
                                 np.array([7, 8, 7], dtype=np.uint64), 1)
    for i, seed in enumerate((7, 8)):
        one = rollsim.simulate(agentic.replace(seed=seed), record="summary").summary
        for m in AGENTIC:
            assert _same(out[m][i].item(), one[m]), m
    assert out["turns"][0] > 0 and out["env_busy_s"][0] > 0
    # not agentic: 0 and NaN
    for m in AGENTIC:
        want = 0 if out[m].dtype == np.uint64 else math.nan
        assert _same(out[m][2].item(), want), m


def test_sweep_frames_have_the_agentic_columns() -> None:
    df = rollsim.sweep(TIGHT.replace(agentic=AGENT, horizon_s=600.0), {"rollout_slots": [32, 64]}, seeds=[1],
                       progress=False)
    for m in AGENTIC:
        assert m in df.columns
    assert df.schema["turns"] == SUMMARY_SCHEMA["turns"]
    one = rollsim.simulate(TIGHT.replace(agentic=AGENT, horizon_s=600.0, rollout_slots=32, seed=1),
                           record="summary").summary
    row = df.filter(df["rollout_slots"] == 32).row(0, named=True)
    for m in AGENTIC:
        assert _same(row[m], one[m]), m
    plain = rollsim.sweep(TIGHT.replace(horizon_s=600.0), {"rollout_slots": [64]}, seeds=[1], progress=False)
    assert plain["turns"].to_list() == [0] and math.isnan(plain["env_wait_s"][0])
