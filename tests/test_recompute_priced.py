"""A deployment's recompute is priced: a request preempted for KV (or resumed after a weight update)
prefills its prompt + tokens done again, as vLLM's recompute preemption does (vllm-project/vllm
vllm/v1/core/sched/scheduler.py: the preempted request's computed tokens are reset to 0 and it is
prefilled again; https://docs.vllm.ai/en/stable/configuration/optimization/ , Preemption). ``Deployment.scenario`` hands
prompts and recomputes to the engine's shared prefill (``prefill_mode="shared"``) at the instance's
prefill rate, so the recompute slows the instance's steps like the prefill it is. Before, the default
folded the prompt into the decode table and left ``prefill_tokens_per_s`` infinite: the same run with
any prefill speed was identical."""

from __future__ import annotations

import math
import warnings

import pytest

from rollsim import DeploymentWarning, FullyAsync, LogNormal, Synchronous, simulate
from rollsim.errors import GenerationOutrunsTrainingWarning
from rollsim.hardware import Deployment

# Qwen3-8B on one H100, 256 sequences: 395,353 tokens of KV, about 1,544 per sequence, while an answer
# averages 3,000 tokens after a 512-token prompt: the KV capacity binds
D = Deployment(model="Qwen3-8B", gpu="H100", rollout_gpus=1, rollout_tp=1, train_gpus=1, max_num_seqs=256)
LENGTHS = LogNormal(mu=math.log(3000) - 0.5, sigma=1.0, max_tokens=16384)
PROMPT = 512.0


def _scenario(d, **kw):
    """``d.scenario(...)`` of a deployment whose one training GPU cannot hold Qwen3-8B's training state: the
    scenario prices the step all the same, with a DeploymentWarning saying so."""
    with pytest.warns(DeploymentWarning, match="^train_gpus: 1 x H100 cannot hold the training state of Qwen3-8B "):
        return d.scenario(**kw)


def _batch(**kw):
    """One synchronous batch of 128 prompts x 8 answers (1,024 on 256 slots); the trainer's step
    outlasts the horizon, so the run is that batch's generation (as serving_benchmark runs one)."""
    return _scenario(D, lengths=LENGTHS, prompts_per_step=128, group_size=8, prompt_tokens=PROMPT,
                      pipeline=Synchronous(), per_rank=False, horizon_s=1e12, train_step_s=1e12, seed=3, **kw)


def _makespan(sc) -> tuple[float, dict]:
    r = simulate(sc)
    return float(r.steps["start_s"][0]), r.summary


def test_default_prefill_is_the_engines_shared_prefill_at_the_instance_rate():
    sc = _batch()
    assert sc.prefill_mode == "shared"
    assert sc.max_num_batched_tokens == 8192
    assert sc.prefill_tokens_per_s == pytest.approx(D.prefill_tokens_per_s(PROMPT), rel=1e-12)
    assert sc.prefill_tokens_per_s == pytest.approx(62_704.07, rel=1e-6)
    # the table has no prefill term: the step of one sequence at the mean context
    assert sc.decode_tokens_per_s == pytest.approx(D.decode_tokens_per_s(1, PROMPT + LENGTHS.mean_tokens() / 2),
                                                   rel=1e-9)
    assert sc.kv_cache_tokens == 395_353


def test_binding_kv_recomputes_and_the_recompute_costs_time():
    priced, s = _makespan(_batch())
    assert s["preemptions"] == 3038
    assert s["tokens_recomputed"] == pytest.approx(2_437_146.9, rel=1e-6)
    free, s_free = _makespan(_batch().replace(prefill_tokens_per_s=1e12))
    assert s_free["tokens_recomputed"] == pytest.approx(s["tokens_recomputed"], rel=1e-9)
    assert priced == pytest.approx(953.894, rel=1e-5)
    assert free == pytest.approx(913.981, rel=1e-5)
    # the batch is longer by the instance's prefill of the recomputed tokens and the 128 prompts
    rate = D.prefill_tokens_per_s(PROMPT)
    assert priced - free == pytest.approx((s["tokens_recomputed"] + 128 * PROMPT) / rate, rel=0.01)


def test_per_slot_fold_leaves_recompute_free():
    # prefill_mode="per_slot" keeps the model before: prompt folded in the table, prefill infinite
    sc = _batch(prefill_mode="per_slot")
    assert sc.prefill_mode == "per_slot" and sc.prefill_tokens_per_s == math.inf
    fold, s = _makespan(sc)
    assert s["tokens_recomputed"] == pytest.approx(2_474_903.2, rel=1e-6)
    assert fold == pytest.approx(913.800, rel=1e-5)
    # any prefill speed gives the same batch: the recompute is not priced by the fold
    fast, _ = _makespan(sc.replace(prefill_tokens_per_s=1e12))
    assert fast == pytest.approx(fold, rel=1e-9)


def test_without_a_kv_limit_the_shared_prefill_and_the_fold_agree():
    shared, s = _makespan(_batch().replace(kv_cache_tokens=None))
    fold, _ = _makespan(_batch(prefill_mode="per_slot").replace(kv_cache_tokens=None))
    assert s["tokens_recomputed"] == 0.0 and s["preemptions"] == 0
    assert shared == pytest.approx(804.401, rel=1e-5)
    assert fold == pytest.approx(804.383, rel=1e-5)
    assert shared / fold - 1 == pytest.approx(2.2e-5, abs=1e-5)


def test_fully_async_generates_fewer_tokens_when_the_recompute_is_priced():
    kw = dict(lengths=LENGTHS, prompts_per_step=32, group_size=8, prompt_tokens=PROMPT, horizon_s=1800.0, seed=3,
              pipeline=FullyAsync())
    d = Deployment(model="Qwen3-8B", gpu="H100", rollout_gpus=2, rollout_tp=1, train_gpus=2, max_num_seqs=256)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GenerationOutrunsTrainingWarning)  # the ready queue grows: not the point here
        priced = simulate(d.scenario(**kw)).summary
        free = simulate(d.scenario(**kw).replace(prefill_tokens_per_s=1e12)).summary
    assert priced["tokens_recomputed"] == pytest.approx(11_978_977.1, rel=1e-6)
    assert priced["tokens_generated"] == pytest.approx(12_439_284.9, rel=1e-6)
    assert free["tokens_generated"] == pytest.approx(13_160_575.7, rel=1e-6)
    assert priced["tokens_generated"] / free["tokens_generated"] - 1 == pytest.approx(-0.0548, abs=5e-4)


def test_no_prompt_still_prices_the_recompute():
    sc = _scenario(D, lengths=LENGTHS, prompts_per_step=32, group_size=8, prompt_tokens=0.0)
    assert sc.prefill_mode == "shared"
    assert sc.prefill_tokens_per_s == pytest.approx(D.prefill_tokens_per_s(0.0), rel=1e-12)
    assert math.isfinite(sc.prefill_tokens_per_s)


def test_agentic_default_stays_per_slot():
    from rollsim import Agentic

    sc = _scenario(D, lengths=LENGTHS, prompts_per_step=8, group_size=1, prompt_tokens=PROMPT,
                    agentic=Agentic(max_turns=2, tool_latency_s=1.0, observation_tokens=100.0,
                                    max_context_tokens=40_000.0))
    assert sc.prefill_mode == "per_slot"
    c = PROMPT + LENGTHS.mean_tokens()
    assert sc.prefill_tokens_per_s == pytest.approx(c / D.prefill_s(c), rel=1e-12)


def test_split_inputs_carry_the_shared_prefill():
    base = _batch()
    one, kwargs, _ = D.split_inputs(base, 4)
    assert one.prefill_mode == "shared"
    assert one.max_num_batched_tokens == 8192
    assert one.prefill_tokens_per_s == pytest.approx(D.prefill_tokens_per_s(PROMPT), rel=1e-12)
    assert one.kv_cache_tokens == 395_353 and kwargs["slots_per_instance"] == 256


def test_unknown_prefill_mode_is_refused():
    from rollsim import ScenarioError

    with pytest.raises(ScenarioError, match="prefill_mode: must be 'per_slot' or 'shared', got 'chunked'"):
        D.scenario(lengths=LENGTHS, prompts_per_step=1, prefill_mode="chunked")


def test_default_step_budget_holds_every_sequence():
    # vLLM refuses max_num_batched_tokens < max_num_seqs: the default budget grows past 8192 with the batch
    big = Deployment(model="Qwen3-8B", gpu="H100", rollout_gpus=1, max_num_seqs=10_000)
    sc = _scenario(big, lengths=LogNormal(mu=5.0, sigma=0.5, max_tokens=1024), prompts_per_step=8, prompt_tokens=PROMPT)
    assert (sc.slots_per_instance, sc.max_num_batched_tokens) == (10_000, 20_000)
    assert sc.prefill_tokens_per_s == pytest.approx(big.prefill_tokens_per_s(PROMPT, 20_000), rel=1e-12)
    assert _batch(max_num_batched_tokens=4096).max_num_batched_tokens == 4096  # a budget given is kept
