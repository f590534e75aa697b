"""The command line's run guards name its own flags, choice values take either spelling, and counts
of one are singular."""

from __future__ import annotations

import json
import os

import pytest

from rollsim import cli, resources
from rollsim._text import count


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_choice_values_take_hyphens_too(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("run", "--horizon-s", "3600", "--max-staleness", "1")
    code, plain, _ = _run(capsys, *args)
    code1, under, _ = _run(capsys, *args, "--on-update", "abort_drop")
    code2, hyphen, _ = _run(capsys, *args, "--on-update", "abort-drop")
    assert (code, code1, code2) == (0, 0, 0)
    assert hyphen == under
    assert json.loads(under)["tokens_wasted"] > json.loads(plain)["tokens_wasted"]  # abort_drop really applied


def test_help_lists_the_schema_choices() -> None:
    text = cli.build_parser()._subparsers._group_actions[0].choices["run"].format_help()  # type: ignore[union-attr]
    assert "--on-update {continue,abort_drop,abort_resubmit,wait,keep_recompute,keep_stale}" in text
    assert "--lag-release {take,sync}" in text and "--on-stale {drop,requeue}" in text
    assert "--max-events MAX_EVENTS" in text


def test_a_summary_run_is_not_held_to_the_memory_guard(capsys: pytest.CaptureFixture[str]) -> None:
    # 2.45e8 samples: over the 5e7 memory guard, which only applies when --out records every sample
    code, _, err = _run(capsys, "run", "--horizon-s", "1e8", "--max-events", "1000")
    assert code == 2 and err.startswith("rollsim: error: --max-events: this scenario would process about 2.45e+08")


def test_a_refused_run_writes_nothing(tmp_path: os.PathLike[str], capsys: pytest.CaptureFixture[str]) -> None:
    out = os.path.join(tmp_path, "out")
    code, _, err = _run(capsys, "run", "--horizon-s", "1e8", "--out", out)
    assert code == 2 and err.startswith("rollsim: error: --max-samples: ")
    assert not os.path.exists(out)
    code, _, err = _run(capsys, "compare", "--horizon-s", "1e8", "--out", out)
    assert code == 2 and "--max-samples" in err and not os.path.exists(out)


def test_max_events_zero_is_no_limit(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "run", "--horizon-s", "600", "--max-events", "0")
    assert code == 0 and json.loads(out)["steps"] == 2


def test_counts_of_one_are_singular() -> None:
    assert (count(1, "GPU"), count(8, "GPU"), count(2, "vllm instance")) == ("1 GPU", "8 GPUs", "2 vllm instances")
    row = {"placement": "disaggregated", "rollout_gpus": 7, "train_gpus": 1, "tokens_trained_per_s": 12.0}
    assert resources._describe_split(row) == "7 rollout + 1 training GPU, 12 tokens trained/s"
    assert resources._describe_split(dict(row, placement="colocated", rollout_gpus=1)).startswith("colocated on all 1 GPU,")


def test_batch_order_takes_hyphens_too(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("run", "--horizon-s", "3600", "--group-size", "8")
    outs = [_run(capsys, *args, "--batch-order", b)[1] for b in ("oldest_first", "oldest-first")]
    assert outs[0] == outs[1] and json.loads(outs[0])["steps"] > 0
