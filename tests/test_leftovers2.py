"""Review leftovers in the Python layer: split and compare over the same horizon, the example metrics'
names from the calibration's table, the training-state words built once, a Megatron layout derived once,
the colocated switch priced on the deployment already built, vLLM's per-GPU engine defaults and
Megatron's expert-parallel folding."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from rollsim.calibration import FRAMEWORK_METRICS

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------- example metrics' names


def test_slime_example_names_are_the_calibrations(monkeypatch):
    """The script's slime columns are FRAMEWORK_METRICS' names (it retyped them): renamed there, renamed here."""
    gen = runpy.run_path(str(ROOT / "scripts" / "gen_example_metrics.py"), run_name="gen")
    cols = gen["slime"]().columns
    assert cols == ["rollout/step", "perf/step_time", "perf/rollout_time", "perf/actor_train_time",
                    "perf/update_weights_time", "rollout/response_len/mean", "rollout/response_len/max",
                    "rollout/truncated_ratio"]
    monkeypatch.setitem(FRAMEWORK_METRICS["slime"], "gen_s", [["perf/renamed_rollout_time"]])
    assert gen["slime"]().columns == [c if c != "perf/rollout_time" else "perf/renamed_rollout_time" for c in cols]


# ---------------------------------------------------------------------------------------- the training-state words


def test_the_training_state_words_are_built_once(capsys):
    """The deployment's warning, split's exclusion and hardware's line say the training state in the words of
    one function (each wrote its own: three spellings of the same bound)."""
    from rollsim.cli import _train_state_gpus, main
    from rollsim.hardware import Deployment
    from rollsim.hardware.switching import train_state_words

    d = Deployment("Qwen3-30B-A3B", "H100", rollout_gpus=8, train_gpus=4)
    need, words = train_state_words(d.spec, d.accelerator, 4)
    assert need == 7 and words == (
        "the training state of Qwen3-30B-A3B (30.5B parameters x 18 bytes = 512 GiB: weights, gradients, Adam; "
        "128.0 GiB per GPU on 4 GPUs; it needs at least 7 x H100 of 80 GiB, before activations)")
    assert d.train_state_words() == f"train_gpus: 4 x H100 cannot hold {words}, or a trainer that offloads it " \
                                    "(priced as if it fit)"
    bare = train_state_words(d.spec, d.accelerator)[1]
    assert bare == words.replace("128.0 GiB per GPU on 4 GPUs; ", "")
    assert _train_state_gpus(d) == (7, f" ({bare}; a trainer that offloads it: --min-train-gpus 1)")
    assert main(["hardware", "--model", "Qwen3-30B-A3B", "--gpu", "H100", "--rollout-gpus", "8", "--train-gpus", "4",
                 "--train-tokens", "1e5"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"  {words}: does not fit (or a trainer that offloads it)"
