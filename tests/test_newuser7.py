"""A new user's first-use defects: one pipeline spelling for every command (run, split, whatif and
``pipeline_from_name``), an undefined value as ``-`` in every printed table, split --model's trainer
priced as ``rollsim hardware`` prices it (the optimizer sharded over the training GPUs) with both
outputs saying what they count, and a utilization line that lies on another one named and not hidden.
The refusals (a horizon past the sample limit, a training option's short name) are rows of
``tests/bad_inputs_newuser7.py``."""

from __future__ import annotations

import json

import pytest

from rollsim import FullyAsync, OffPolicy, OneStepAsync, Synchronous
from rollsim.cli import main
from rollsim.pipelines import PIPELINE_NAMES, pipeline_from_name, pipeline_name


@pytest.mark.parametrize("word, name", [("sync", "sync"), ("synchronous", "sync"), ("Sync", "sync"),
                                        ("one_step", "one-step"), ("off_policy", "k-step"), ("k_step", "k-step"),
                                        ("Fully_Async", "fully-async"), ("fully_async", "fully-async"),
                                        ("async", None), ("asynchronous", None), ("fully-asynchronous", None),
                                        ("one-step-async", None)])
def test_pipeline_name_is_the_command_lines(word, name):
    assert pipeline_name(word) == name
    if name is not None:  # the Python API takes the same words (k-step with its K)
        want = {"sync": Synchronous(), "one-step": OneStepAsync(), "k-step": OffPolicy(k=3),
                "fully-async": FullyAsync()}[name]
        assert pipeline_from_name(word + (":3" if name == "k-step" else "")) == want
    assert set(PIPELINE_NAMES) == {"sync", "one-step", "k-step", "fully-async"}


@pytest.mark.parametrize("word", ["synchronous", "Sync", "sync"])
def test_run_and_split_take_the_same_pipeline_words(word, capsys):
    assert main(["run", "--pipeline", word, "--horizon-s", "300"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["staleness_max"] == 0 and run["steps"] >= 1   # synchronous: nothing stale
    assert main(["split", "--gpus", "4", "--gpu-s-per-token", "1e-3", "--pipeline", word, "--horizon-s", "300"]) == 0
    assert ", pipeline sync; objective" in capsys.readouterr().out.splitlines()[0]


# ------------------------------------------------------------------------------------ undefined is "-"
def test_every_table_shows_undefined_as_a_dash():
    import math

    import polars as pl

    from rollsim import report
    from rollsim._text import format_table
    from rollsim.cli import _fmt

    df = pl.DataFrame({"variant": ["a", "b"], "staleness_long": [0.5, math.nan], "n": [1, None]})
    lines = format_table(df, {"staleness_long": "no long answer"}).split("\n")
    assert lines[3].split() == ["b", "-", "-"]
    assert lines[-1] == "* staleness_long - (undefined): no long answer"
    assert _fmt(math.nan, "f2") == "-" and report._cell(math.nan, "staleness_mean") == "-"


# ------------------------------------------------------------------------------------ split's trainer = hardware's
def test_split_prices_the_trainer_as_the_hardware_model_does(monkeypatch, capsys):
    """split --model's rule (GPU-s per token / GPUs + sharded optimizer / GPUs) is train_step_s on
    the split's GPU count for a batch of the scenario's mean sequences: the optimizer was priced on
    one GPU and kept whole on any count (0.39 s instead of 0.024 s for Qwen3-30B-A3B on 16 H100s)."""
    from rollsim import resources
    from rollsim.hardware.training import train_step_s

    seen = {}

    class Seen(Exception):
        pass

    def capture(base, gpus, **kw):
        seen.update(kw, base=base)
        raise Seen

    monkeypatch.setattr(resources, "gpu_split", capture)
    with pytest.raises(Seen):
        main(["split", "--gpus", "24", "--model", "Qwen3-30B-A3B", "--gpu", "H100"])
    base = seen.pop("base")
    kw = {k: seen[k] for k in ("gpus_per_instance", "slots_per_instance", "gpu_s_per_token", "train_fixed_s",
                               "train_gpu_s_per_step")}
    sc = resources.disaggregated(base, rollout_gpus=8, train_gpus=16, **kw)
    seq = base.prompt_tokens + base.lengths.mean_tokens()
    tokens = base.batch_size * seq
    want = train_step_s("Qwen3-30B-A3B", "H100", train_gpus=16, tokens=tokens, sequences=base.batch_size)
    assert sc.train_step_s + sc.train_s_per_token * tokens == pytest.approx(want["total"], rel=1e-9)
    assert sc.train_step_s == pytest.approx(want["optimizer"] + want["collectives"], rel=1e-9)


def test_split_and_hardware_say_what_they_price(capsys):
    assert main(["split", "--gpus", "4", "--model", "Qwen3-0.6B", "--gpu", "H100", "--horizon-s", "300"]) in (0, 1)
    head = capsys.readouterr().out.splitlines()[0]
    assert "x the deployment's decode table, KV capacity " in head and " tokens per instance)" in head
    assert "GPU-s per token (sequences of the mean 3,140 tokens, prompt included) + " in head
    assert "GPU-s per step over the training GPUs (the sharded optimizer)" in head
    assert main(["split", "--gpus", "4", "--gpu-s-per-token", "1e-3", "--horizon-s", "300"]) in (0, 1)
    assert "x 30 tokens/s, no KV capacity limit), training the rest at 0.001 GPU-s per token + 0 s per step" in \
        capsys.readouterr().out.splitlines()[0]
    assert main(["hardware", "--model", "Qwen3-30B-A3B", "--gpu", "H100", "--train-gpus", "16", "--train-tokens",
                 "1.54e6"]) == 0
    line = capsys.readouterr().out.splitlines()[-2]  # the last says whether the training state fits
    assert line.startswith("  training step of 1,540,000 tokens on 16 GPUs (752 sequences of --context-tokens 2,048;")
    assert line.endswith("total 11.02 s")


# ------------------------------------------------------------------------------------ overlapping lines
def test_utilization_line_on_another_is_drawn_over_it_and_named():
    import matplotlib

    matplotlib.use("Agg")
    from rollsim import Scenario, plot, simulate

    sc = Scenario(horizon_s=1800.0, rng="fast")
    runs = {name: simulate(sc.replace(pipeline=p)) for name, p in
            [("sync", Synchronous()), ("fully async", FullyAsync()), ("cap 2", FullyAsync(max_staleness=2))]}
    fig = plot.utilization(runs)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[2].endswith("100% overall (on fully async's line)")
    assert "(on" not in labels[0] and "(on" not in labels[1]
    widths = {p.get_label(): (p.get_linewidth(), p.get_alpha()) for p in ax.patches}
    assert widths[labels[1]] == (4.0, 0.45) and widths[labels[2]] == (1.4, 1.0) and widths[labels[0]] == (1.4, 1.0)
