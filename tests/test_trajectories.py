"""The agentic presets of :mod:`rollsim.trajectories` and the README's published agentic rows made
with them: the presets' prefill speeds (from :mod:`rollsim.hardware`), what ``kv_policy`` keep vs
drop costs, the Marin question (halving inference on a fully async SWE run) and the verl#2873
saturation reconstruction (tool time against generation time as trajectories outgrow the
sandboxes)."""

from __future__ import annotations

import dataclasses
import math

import pytest

import rollsim
from rollsim import LogNormal, Scenario, trajectories
from rollsim.hardware import Deployment


def test_the_presets_prefill_at_their_deployment_s_speed() -> None:
    # the derivations of the docstrings: a lone context's prefill on the preset's model and GPU
    code = Deployment(model="Qwen2.5-7B", gpu="H20", rollout_gpus=1)
    swe = Deployment(model="Qwen3-32B", gpu="H100", rollout_gpus=2, rollout_tp=2)
    assert trajectories.CODE_INTERPRETER_PREFILL_TOKENS_PER_S == round(4096 / code.prefill_s(4096)) == 8211
    # 13,191 under the serving fit it was derived with; the refit that came with the Ampere factor
    # (request_overhead_s 5.53 -> 5.51 ms, layer_overhead_s 94.0 -> 94.3 us) gives 13,190: the preset keeps
    # its constant, so its scenarios' results stay bit for bit
    assert trajectories.SWE_AGENT_PREFILL_TOKENS_PER_S == 13191
    assert round(16384 / swe.prefill_s(16384)) == 13190
    assert trajectories.code_interpreter_math().prefill_tokens_per_s == 8211.0
    assert trajectories.swe_agent().prefill_tokens_per_s == 13191.0
    # a base scenario's own prefill speed is kept (only the default, free prefill, is replaced)
    own = Scenario(group_size=8, prefill_tokens_per_s=2000.0)
    assert trajectories.code_interpreter_math(own).prefill_tokens_per_s == 2000.0
    assert trajectories.swe_agent(own).prefill_tokens_per_s == 2000.0


def _policy(sc: Scenario, policy: str) -> dict[str, float]:
    assert sc.agentic is not None
    return rollsim.simulate(sc.replace(agentic=dataclasses.replace(sc.agentic, kv_policy=policy)),  # type: ignore[arg-type]
                            record="summary").summary


def test_keep_and_drop_differ_in_prefill_time_and_steps() -> None:
    # dropping the KV during each call re-prefills the whole context on the next turn: ~24x the
    # prefill tokens, ~24x the prefill slot-seconds (which now cost time), one step fewer in 6 h
    sc = trajectories.swe_agent(Scenario(group_size=8, batch_size=256, horizon_s=6 * 3600.0))
    keep, drop = _policy(sc, "keep"), _policy(sc, "drop")
    assert (keep["steps"], drop["steps"]) == (21, 20)
    assert keep["gpu_prefill_s"] == pytest.approx(6041.8, abs=0.1)
    assert drop["gpu_prefill_s"] == pytest.approx(143861.4, abs=0.1)
    assert drop["tokens_prefilled_turns"] / keep["tokens_prefilled_turns"] == pytest.approx(23.8, abs=0.05)
    # the prefill seconds are the prefill tokens at the preset's speed (less what is ahead at the end)
    for s in (keep, drop):
        assert s["gpu_prefill_s"] <= s["tokens_prefilled"] / trajectories.SWE_AGENT_PREFILL_TOKENS_PER_S
        assert s["gpu_prefill_s"] + s["gpu_decode_s"] == pytest.approx(s["slot_busy_s"], rel=1e-12)


def test_halving_inference_on_a_fully_async_swe_run() -> None:
    # the README's Marin row: swe_agent for 6 hours with 256 and 128 slots (trajectories in flight
    # bounded by the slots): the steps halve and the trainer idles either way
    rows = []
    for slots in (256, 128):
        s = rollsim.simulate(trajectories.swe_agent(Scenario(group_size=8, batch_size=256, rollout_slots=slots,
                                                             horizon_s=6 * 3600.0)), record="summary").summary
        rows.append((s["steps"], round(s["trainer_idle_s"] / s["end_s"], 2)))
    assert rows == [(21, 0.94), (10, 0.97)]


def saturation(trajectories_in_flight: int, horizon_s: float = 3600.0) -> Scenario:
    """The README's verl#2873 reconstruction: ``code_interpreter_math`` (128 sandboxes, calls of
    1.86 s mean) with turns of median 150 tokens at 60 tokens/s and as many slots as trajectories
    in flight (so that only the sandboxes bound them), for one hour."""
    n = trajectories_in_flight
    sc = trajectories.code_interpreter_math(Scenario(group_size=8, rollout_slots=n, decode_tokens_per_s=60.0,
                                                     horizon_s=horizon_s))
    return sc.replace(lengths=LogNormal(math.log(150.0), 1.0, 8192.0), **{"agentic.max_trajectories": n})


# the chapter's trainer (512 samples per 60 s step) falls behind these short trajectories: not the
# question here (the ratio of tool time to generation time is)
@pytest.mark.filterwarnings("ignore::rollsim.GenerationOutrunsTrainingWarning")
def test_tool_time_outgrows_generation_once_the_sandboxes_saturate() -> None:
    rows = []
    for n in (256, 1024, 2048):
        s = rollsim.simulate(saturation(n), record="summary").summary
        tool_s = s["env_busy_s"] + s["env_wait_s"]  # time in tool calls, queueing included
        rows.append((round(tool_s / s["gpu_decode_s"], 2), round(s["env_utilization"], 2),
                     round(s["tool_calls"] / s["end_s"], 1), round(s["env_wait_s"] / tool_s, 2)))
    # ratio of tool time to generation time, sandboxes busy, calls per second, share queueing
    assert rows == [(0.33, 0.19, 13.4, 0.0), (0.33, 0.78, 53.2, 0.01), (1.17, 1.0, 68.7, 0.72)]
    # saturated, the calls run at the sandboxes' throughput: 128 / 1.863 s (the latency's mean)
    assert rows[2][2] == pytest.approx(128 / (1.13 * math.exp(0.5)), abs=0.1)
