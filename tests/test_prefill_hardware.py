"""``Deployment.scenario(prefill_mode="shared")``: the shared-prefill fields filled from the serving
model, and the long-prompt serving runs (gpustack/gpustack docs/performance-lab/qwen3-32b/h100.md)
simulated with prefill per slot and shared."""

from __future__ import annotations

import math

import pytest

from rollsim import DeploymentWarning, Empirical, Synchronous, simulate
from rollsim.hardware import Deployment, serving

QWEN32 = Deployment(model="Qwen3-32B", gpu="H100", rollout_gpus=1)


def _scenario(d, **kw):
    """``d.scenario(...)`` of a deployment whose one training GPU cannot hold Qwen3-32B's training state: the
    scenario prices the step all the same, with a DeploymentWarning saying so."""
    with pytest.warns(DeploymentWarning, match="^train_gpus: 1 x H100 cannot hold the training state of Qwen3-32B "):
        return d.scenario(**kw)


def test_prefill_rate_is_the_marginal_cost_of_a_chunk_in_a_decode_step():
    with_chunk = serving.step_time("Qwen3-32B", "H100", batch=1.0, context_tokens=4000.0, prefill_tokens=8192.0,
                                   prefill_context_tokens=2000.0)["total_s"]
    alone = serving.step_time("Qwen3-32B", "H100", batch=1.0, context_tokens=4000.0)["total_s"]
    assert QWEN32.prefill_tokens_per_s(4000.0) == pytest.approx(8192.0 / (with_chunk - alone), rel=1e-12)
    # compute-bound: more than the datasheet's FLOP/s can give is impossible
    flops = 2.0 * (QWEN32.spec.active_params - QWEN32.spec.embedding_params)
    assert QWEN32.prefill_tokens_per_s(4000.0) < QWEN32.accelerator.bf16_flops / flops


def test_shared_scenario_fields():
    lengths = Empirical([200.0])
    sc = _scenario(QWEN32, lengths=lengths, prompts_per_step=500, prompt_tokens=4000.0, pipeline=Synchronous(),
                         prefill_mode="shared")
    per_slot = _scenario(QWEN32, lengths=lengths, prompts_per_step=500, prompt_tokens=4000.0, pipeline=Synchronous(),
                               prefill_mode="per_slot")
    ctx = 4000.0 + 100.0
    assert (sc.prefill_mode, sc.max_num_batched_tokens, per_slot.prefill_mode) == ("shared", 8192, "per_slot")
    assert (sc.kv_cache_tokens, sc.slots_per_instance) == (per_slot.kv_cache_tokens, per_slot.slots_per_instance)
    assert sc.slots_per_instance == 1024 and sc.kv_cache_tokens == math.floor(QWEN32.kv_capacity_tokens(ctx))
    assert sc.prefill_tokens_per_s == QWEN32.prefill_tokens_per_s(4000.0, 8192)
    # the prompts are the engine's: no prefill term in the table
    assert sc.decode_throughput_table == serving.decode_throughput_table("Qwen3-32B", "H100", context_tokens=ctx,
                                                                         max_seqs=1024)
    assert per_slot.decode_throughput_table != sc.decode_throughput_table
    # no prompt: a recompute of the tokens done still prefills, at the rate without a prompt
    assert _scenario(QWEN32, lengths=lengths, prompts_per_step=8, prefill_mode="shared").prefill_tokens_per_s == \
        QWEN32.prefill_tokens_per_s(0.0, 8192)
    # the default is the shared prefill
    default = _scenario(QWEN32, lengths=lengths, prompts_per_step=500, prompt_tokens=4000.0, pipeline=Synchronous())
    assert default == sc


@pytest.mark.parametrize(("inp", "out", "requests", "duration_s", "per_slot_err", "shared_err"), [
    # with vLLM's measured non-KV memory (serving.VLLM_NON_KV_GIB: 34,922 tokens of KV, 8-17 sequences of
    # 2-4k); with the 0.5 GiB reserve before (42,909 tokens) they were 1.34 / 0.21, 1.09 / 0.95, 1.02 / 0.89
    (32000, 100, 100, 1157.25, 1.336, 0.221),
    (4000, 200, 500, 976.29, 0.841, 0.727),
    (2000, 100, 500, 328.04, 0.849, 0.731),  # 0.850 before the refit with the Ampere factor (layer_overhead_s +0.3 %)
])
def test_long_prompt_runs_simulated(inp, out, requests, duration_s, per_slot_err, shared_err):
    """Throughput error (predicted / measured - 1) of the whole benchmark run (every request
    submitted at once), simulated from the deployment: shared prefill predicts the runs slower,
    nearer the measurements (pinned to three digits)."""
    errs = {}
    for mode in ("per_slot", "shared"):
        sc = _scenario(QWEN32, lengths=Empirical([float(out)]), prompts_per_step=requests, prompt_tokens=float(inp),
                             pipeline=Synchronous(), prefill_mode=mode, horizon_s=1e6, train_step_s=1e5)
        generation_s = simulate(sc).steps["start_s"][0]
        errs[mode] = duration_s / generation_s - 1.0
    assert errs == pytest.approx({"per_slot": per_slot_err, "shared": shared_err}, abs=0.001)


def test_per_token_context_fields():
    lengths = Empirical([2000.0])
    sc = _scenario(QWEN32, lengths=lengths, prompts_per_step=64, prompt_tokens=1000.0, context="per_token",
                         prefill_mode="per_slot")
    ctx = 1000.0 + 1000.0
    one = serving.step_time("Qwen3-32B", "H100", batch=1.0, context_tokens=ctx)["total_s"]
    none = serving.step_time("Qwen3-32B", "H100", batch=1.0, context_tokens=0.0)["total_s"]
    assert sc.decode_s_per_context_token == pytest.approx((one - none) / ctx, rel=1e-12)
    # KV read of a token: 64 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes over 3.35 TB/s, plus attention
    assert 4.9e-8 < sc.decode_s_per_context_token < 1e-7
    assert sc.decode_throughput_table == serving.decode_throughput_table(  # prefill still in the table (per slot)
        "Qwen3-32B", "H100", context_tokens=0.0, max_seqs=sc.slots_per_instance, prefill_tokens_per_token=0.5)
    # the batch-only table at the mean context matches the per-token model at the mean context
    mean = _scenario(QWEN32, lengths=lengths, prompts_per_step=64, prompt_tokens=1000.0, prefill_mode="per_slot")
    n = sc.slots_per_instance  # the table's last point
    t_mean = n / dict(mean.decode_throughput_table)[n]
    t_token = n / dict(sc.decode_throughput_table)[n] + sc.decode_s_per_context_token * n * ctx
    assert t_token == pytest.approx(t_mean, rel=1e-9)
