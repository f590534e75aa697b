"""A new user's first-use defects: one pipeline spelling for every command, ..."""

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
