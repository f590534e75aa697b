"""Published pairs of NeMo RL (NVIDIA-NeMo/RL): calibrate on the synchronous baseline's published step,
predict the asynchronous configuration, compare with what was measured (the README's pairs table, "Bring
your own run", the rows marked NeMo RL).

Neither source publishes the phases of a step, only the step time and tokens/s/GPU (which is the
step again: NeMo RL logs ``global_valid_toks / step / GPUs``, ``nemo_rl/algorithms/grpo.py``). So the
baseline's step is split into generation, training and weight sync by one rule, the same for both
pairs and fixed before any prediction was looked at: the hardware model's own steady-state phases of
the published baseline deployment (:meth:`rollsim.hardware.Deployment.scenario`: its decode table, its
training model and its colocated switch), each scaled by the measured step over their sum. The answer
lengths are the published mean (v0.6: "G-Average Seq len"; PR 1381: the tokens of a step over its
samples), a clip ratio of 0.005, as the verl pairs assume (``tests/test_calibrate_pairs.py``), and the
limit at ``max_total_sequence_length`` less the prompt. v0.6's tokens per answer exceed its mean answer
by 99-121 tokens in every row: read as the prompt (NeMo RL's valid tokens then count prompt + answer),
that is each v0.6 baseline's prompt; PR 1381 gives no mean answer, so its prompt is taken as 0 tokens.

NeMo RL's async GRPO maps onto :func:`rollsim.presets.nemo_rl_async`: ``max_trajectory_age_steps = k``
is admission control with ``eta = k`` (nothing dropped), ``in_flight_weight_updates`` is
``keep_stale`` (True) or ``wait`` (False). For comparison only, the one-step batch pipeline
(``"one-step"``, verl's ``one_step_off_policy``), whose next batch starts only after the previous one
finished generating.
"""

from __future__ import annotations

import dataclasses
import warnings

import polars as pl
import pytest

from rollsim import calibrate, presets, whatif
from rollsim.hardware import Deployment
from rollsim.pipelines import FullyAsync
from rollsim.resources import run_metrics
from rollsim.simulation import simulate

PERF = ("NVIDIA-NeMo/RL docs/about/performance-summary.md, Nemo RL v0.6 (H100 BF16 and GB200 BF16 tables, GRPO, "
        "Megatron; recipes examples/configs/recipes/llm/performance/*.yaml and *-async-1off.yaml at r0.6.0)")
PR1381 = ("NVIDIA-NeMo/RL PR 1381 (Llama 8B, 4K sequences; sync on 4 nodes, async on 5 nodes: 4 training + 1 "
          "generation; max trajectory age 1, 2, 8, with and without in-flight weight updates)")
CLIP = 0.005


@dataclasses.dataclass(frozen=True)
class Pair:
    name: str
    model: str
    backend: str
    gpus: int            # the colocated baseline's GPUs (training and rollout)
    rollout_tp: int
    train_options: dict
    prompts: int
    group: int
    max_tokens: float
    step_s: float        # measured, synchronous
    tok_per_gpu: float   # measured, synchronous
    mean_tokens: float   # answer mean, tokens
    gpu: str = "H100"
    prompt_tokens: float = 0.0
    source: str = PERF


# Llama 8B (PR 1381): the PR names no config; examples/configs/grpo_math_8B.yaml at the PR's merge
# (Llama-3.1-8B-Instruct, 64 prompts x 32, T-GBS 512, max_total_sequence_length 4096, DTensor, vLLM TP1) is
# assumed, on H100 (assumed: the PR names no GPU). Mean answer: 187 tok/s/GPU x 60 s x 32 GPUs / 2,048
# samples = 175.3 tokens (prompt included: the PR gives no mean answer to tell them apart; prompt 0 tokens).
# The async run adds 1 node for generation: 8 rollout GPUs beside the 32 training.
LLAMA = Pair("Llama-3.1-8B PR 1381", "Llama-3.1-8B", "fsdp2", 32, 1, {"mini_batches": 4},
             64, 32, 4096.0, 60.0, 187.0, 187.0 * 60.0 * 32 / 2048, source=PR1381)


def _deployment(p: Pair) -> Deployment:
    return Deployment(model=p.model, gpu=p.gpu, rollout_gpus=p.gpus, rollout_tp=p.rollout_tp, train_gpus=p.gpus,
                      train_backend=p.backend, colocated=True, train_options=p.train_options)


def _metrics(p: Pair, gen: float, train: float, sync: float) -> pl.DataFrame:
    row = {"step_s": p.step_s, "gen_s": gen, "train_s": train, "sync_s": sync, "response_mean": p.mean_tokens,
           "response_max": p.max_tokens, "response_clip_ratio": CLIP}
    return pl.DataFrame({k: [float(v)] * 6 for k, v in row.items()})


_SPLITS: dict[str, tuple[float, float, float]] = {}


def split(p: Pair) -> tuple[float, float, float]:
    """The measured step split as the hardware model splits the baseline: (generation, training, sync) s."""
    if p.name not in _SPLITS:
        _SPLITS[p.name] = _split(p)
    return _SPLITS[p.name]


def _split(p: Pair) -> tuple[float, float, float]:
    dep = _deployment(p)
    kw = dict(bootstrap=0, prompts_per_step=p.prompts, group_size=p.group, max_response_tokens=p.max_tokens,
              prompt_tokens=p.prompt_tokens)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the lengths the calibration fits (they do not depend on the split)
        lengths = calibrate(_metrics(p, p.step_s / 2, p.step_s / 2, 0.0), _deployment(p), **kw).scenario.lengths
        sc = dep.scenario(lengths=lengths, prompts_per_step=p.prompts, group_size=p.group, per_rank=False,
                          prompt_tokens=p.prompt_tokens, horizon_s=50_000.0)
        m = run_metrics(simulate(sc, record="samples"), warmup_steps=2)
    parts = (m["generation_s"], m["train_s"], sc.weight_sync_s)
    f = p.step_s / sum(parts)
    return tuple(x * f for x in parts)  # type: ignore[return-value]


def calibrated(p: Pair, hardware: bool):
    kw = dict(bootstrap=0, prompts_per_step=p.prompts, group_size=p.group, max_response_tokens=p.max_tokens,
              prompt_tokens=p.prompt_tokens)
    if hardware:
        kw.update(model=p.model, gpu=p.gpu, backend=p.backend, train_options=p.train_options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = calibrate(_metrics(p, *split(p)), _deployment(p), **kw)
    return cal if hardware else dataclasses.replace(cal, hardware=None)  # 1 / GPUs: no model to move the cost


def predict(p: Pair, hardware: bool, variants: list[dict]) -> pl.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return whatif(calibrated(p, hardware), variants, draws=0, steps=12)


def nemo(k: int, in_flight: bool) -> object:
    return presets.nemo_rl_async(k, in_flight).pipeline


def test_published_numbers():
    # tokens/s/GPU is the step again: tokens of a step / (step x GPUs); v0.6's tokens per step are its 2,048
    # answers of the published mean within the page's averaging ("the difference is small"): 3,306 and 3,358
    # tokens per answer against G-Average Seq len 3,203 and 3,201
    assert round(1102 * 192 * 32 / 2048) == 3306 and round(1414 * 152 * 32 / 2048) == 3358
    # every synchronous v0.6 baseline: its tokens per answer less its mean answer (the prompt), 99-121 tokens
    assert [round(p.prompt_tokens) for (p, _), _, _ in V06] == [103, 107, 121, 109, 120, 99]
    # PR 1381: 359,040 tokens per synchronous step on 32 GPUs (175.3 per answer of 2,048), 401,520 per async step
    # on 40 GPUs (5 nodes; 321,216 if the 32 training GPUs are counted)
    assert 187 * 60 * 32 == 359_040 and 478 * 21 * 40 == 401_520 and 478 * 21 * 32 == 321_216
    assert LLAMA.mean_tokens == pytest.approx(175.3125)
    assert LLAMA.source == PR1381 and {p.source for (p, _), _, _ in V06} == {PERF}


def test_hardware_split_of_the_baselines():
    # the rule's split (generation, training, sync) of each measured step, seconds
    assert [round(x, 1) for x in split(V06[0][0][0])] == [151.6, 37.9, 2.5]
    assert [round(x, 1) for x in split(LLAMA)] == [52.6, 5.9, 1.5]


def test_mapping_of_nemo_rl_async():
    assert nemo(2, True) == FullyAsync(admission_eta=2, batch_order="oldest_first", on_update="keep_stale")
    assert nemo(1, False) == FullyAsync(admission_eta=1, batch_order="oldest_first", on_update="wait")


def _v06(name: str, model: str, gpu: str, gpus: int, rollout_tp: int, parallel: tuple[int, int, int, int],
         prompts: int, group: int, max_tokens: float, step_s: float, tok_per_gpu: float, mean_tokens: float,
         rollout_gpus: int) -> tuple[Pair, int]:
    """A v0.6 synchronous baseline (the page's row: Generation TP, Training [TP, CP, EP, PP], the step, the
    mean) and its one-step variant's rollout GPUs (the -async-1off recipe's generation nodes). Megatron-Core
    folds the expert group over the tensor, context and data-parallel GPUs (expert tensor parallel = TP, the
    default: TP x EP x PP must divide the GPUs; rollsim.hardware.training.parallel_layout): where the published
    EP exceeds what either GPU count allows, it is capped at it."""
    tp, cp, ep, pp = parallel
    # NeMo RL's tokens/s/GPU counts prompt + answer tokens: the step's tokens per answer less the mean answer is
    # the mean prompt, and max_total_sequence_length bounds prompt + answer
    prompt = tok_per_gpu * step_s * gpus / (prompts * group) - mean_tokens
    ep = min(ep, gpus // (tp * pp), (gpus - rollout_gpus) // (tp * pp))
    opts = {"tensor_parallel": tp, "context_parallel": cp, "expert_parallel": ep, "pipeline_parallel": pp,
            "mini_batches": prompts * group // 512}  # T-GBS 512 in every row
    return Pair(name, model, "megatron", gpus, rollout_tp, opts, prompts, group, max_tokens - prompt, step_s,
                tok_per_gpu, mean_tokens, gpu, prompt), rollout_gpus


#: the Qwen3-30B-A3B H100 pair and the page's other synchronous -> one-step
#: off-policy pairs (not in the notes; every one with its 1-step row on the same GPUs), with the variant's
#: measured step and the predicted steps (s): NeMo RL's async with 1 / GPUs and the hardware model, and the
#: one-step batch pipeline (the same with either rule, generation-bound)
V06 = [
    (_v06("Qwen3-30B-A3B, H100 32", "Qwen3-30B-A3B", "H100", 32, 2, (1, 1, 8, 1), 64, 32, 4096.0, 192.0, 1102.0,
          3203.0, 16), 152.0, (115, 101, 152)),
    (_v06("DeepSeek-V3, H100 512", "DeepSeek-V3", "H100", 512, 32, (1, 1, 16, 16), 32, 16, 1536.0, 111.0, 7.24,
          697.0, 256), 64.1, (61, 56, 95)),
    (_v06("Qwen3-235B-A22B, H100 256", "Qwen3-235B-A22B", "H100", 256, 16, (2, 2, 16, 8), 16, 32, 8192.0, 312.0,
          37.4, 5713.0, 128), 231.0, (162, 158, 297)),
    (_v06("DeepSeek-V3, GB200 256", "DeepSeek-V3", "GB200", 256, 32, (1, 1, 16, 8), 32, 16, 1536.0, 98.7, 16.4,
          700.0, 128), 61.7, (53, 49, 89)),
    (_v06("Qwen3-235B-A22B, GB200 128", "Qwen3-235B-A22B", "GB200", 128, 8, (2, 2, 16, 4), 16, 32, 8192.0, 345.0,
          67.4, 5693.0, 64), 278.0, (187, 174, 314)),
    (_v06("Qwen3-30B-A3B, GB200 16", "Qwen3-30B-A3B", "GB200", 16, 1, (1, 1, 16, 1), 64, 32, 4096.0, 221.0, 1910.0,
          3199.0, 8), 301.0, (144, 115, 153)),
]


def test_the_qwen3_30b_pair():
    # v0.6 (performance-summary.md): synchronous on 32 GPUs colocated, vLLM TP2, Megatron TP1 EP8 -> one-step
    # off-policy (max_trajectory_age_steps 1, in_flight_weight_updates true) generating on 2 nodes (16 GPUs, TP2),
    # training on 2 (16 GPUs; the recipe's PP2 EP8 is not given to the training model, which keeps the
    # baseline's options); 4 optimizer steps per step (T-GBS 512 of G-GBS 2,048). The page's tokens give a
    # mean prompt of 1,102 x 192 x 32 / 2,048 - 3,203 = 103 tokens, so answers of at most 3,993.
    (p, rollout_gpus), measured, _ = V06[0]
    assert (p.gpus, p.rollout_tp, rollout_gpus, p.prompts, p.group, p.step_s, measured) == (32, 2, 16, 64, 32, 192.0,
                                                                                           152.0)
    assert p.train_options == {"tensor_parallel": 1, "context_parallel": 1, "expert_parallel": 8,
                               "pipeline_parallel": 1, "mini_batches": 4}
    assert (p.prompt_tokens, p.max_tokens) == (103.0, 3993.0)


@pytest.mark.parametrize("pair, measured, predicted", V06, ids=[v[0][0].name for v in V06])
def test_v06_sync_to_one_step_off(pair, measured, predicted):
    p, rollout_gpus = pair
    variants = [{"name": "nemo", "pipeline": nemo(1, True), "rollout_gpus": rollout_gpus,
                 "train_gpus": p.gpus - rollout_gpus},
                {"name": "one-step", "pipeline": "one-step", "rollout_gpus": rollout_gpus,
                 "train_gpus": p.gpus - rollout_gpus}]
    got = []
    for hardware in (False, True):
        df = predict(p, hardware, variants)
        assert abs(df["error"][0]) < 0.01                 # the calibrated baseline reproduces its own step
        assert df["train_scaling"][1] == ("hardware" if hardware else "1/gpus")
        print(p.name, hardware, df.select("variant", "step_s", "step_s_low", "step_s_high", "trainer_wait_s",
                                          "train_scale"))
        got += [round(df["step_s"][1])] if hardware else [round(df["step_s"][1]), round(df["step_s"][2])]
        if hardware:
            assert round(df["step_s"][2]) == got[1]        # the one-step pipeline: generation-bound either way
    assert (got[0], got[2], got[1]) == predicted
    print(p.name, {k: f"{v / measured - 1:+.0%}" for k, v in zip(("1/gpus", "hardware", "one-step"), predicted)})


LLAMA_VARIANTS = [{"name": f"age {k}, in-flight {f}", "pipeline": nemo(k, f), "rollout_gpus": 8, "train_gpus": 32}
                  for k in (1, 2, 8) for f in (False, True)]
#: predicted step, s, per (max_trajectory_age_steps, in_flight_weight_updates); the training GPUs do not change
LLAMA_PREDICTED = {(1, False): 53, (1, True): 20, (2, False): 26, (2, True): 12, (8, False): 8, (8, True): 7}


def test_llama_8b_sync_to_async():
    df = predict(LLAMA, False, LLAMA_VARIANTS)
    assert abs(df["error"][0]) < 0.01                     # the calibrated baseline reproduces its 60 s
    print(df.select("variant", "step_s", "trainer_wait_s", "staleness_mean"))
    got = {(k, f): round(df["step_s"][1 + i]) for i, (k, f) in enumerate((k, f) for k in (1, 2, 8)
                                                                            for f in (False, True))}
    assert got == LLAMA_PREDICTED
    assert set(df["train_scaling"][1:].to_list()) == {"same"}
    # the PR publishes only the best async run in its text (21 s); the best of the six predicted:
    assert min(got.values()) / 21.0 - 1 == pytest.approx(-0.67, abs=0.01)
