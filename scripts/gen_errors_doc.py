#!/usr/bin/env python3
"""Writes docs/errors.md from the bad-input table in tests/bad_inputs.py (``--check``: exit 1 if the
page is not current). The table is also what tests/test_bad_inputs.py runs, one test per row."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from bad_inputs import ROWS  # noqa: E402

HEAD = """# Bad input and the exact error it gets

Every bad input raises an exception whose message starts with the field's name and states the allowed
range; nothing you ask for is silently changed. `ScenarioError` is a `ValueError`
(`rollsim.ScenarioError`); the weight-sync cluster loader raises plain `ValueError`; a missing file
raises `FileNotFoundError`; the command line prints `rollsim: error: <message>` and exits with code 2
(argparse's own errors: `rollsim <command>: error: ...`). Engine panics never reach Python: the
bindings catch them and raise `RuntimeError("internal error in the rollsim engine (please report): ...")`.

This page is generated from `tests/bad_inputs.py` by `scripts/gen_errors_doc.py`; `tests/test_bad_inputs.py`
runs every row (`pytest tests/test_bad_inputs.py`) and checks that this page is current. A message
written `re: ...` is a regular expression (it contains a temporary path or a polars message).
In the code column, `write(name, data)` writes a file to a temporary directory and returns its path,
`parquet(columns)` gives the bytes of a parquet file, `toml(text)` writes a TOML file, and `cli(...)`
runs `rollsim ...` (shown as `exit N: <last line of stderr>`).
`tests/test_errors.py` holds an older table (fields only) of further cases.

## Runaway scenarios

`simulate` and `sweep` estimate, before running, how many samples a scenario would start: the rollout
pool busy for the whole horizon, `rollout_slots x (horizon_s / seconds_per_answer + 1)` with
`seconds_per_answer = mean_tokens / decode_tokens_per_s` (+ prompt prefill), capped for batch
pipelines by the batches that can start (each needs at least its longest answer's generation, plus
`train_step_s` when synchronous) and for admission control by the training steps; aborted answers add
a pool per update. Above `max_samples` (default 50,000,000) the run is refused with the estimate of
samples, events and memory (`record="samples"`: 185 bytes per sample for the engine's columns, the
polars frame and one segment each, plus the per-step rows). Raise `max_samples` (up to 2**32 - 1) to
run it anyway; the engine also enforces `max_samples` exactly while running. The estimate is within
about 1 % for the chapter's scenario (17,865 vs 17,851 samples) and for other fully asynchronous
configurations; batch pipelines are over-estimated by 15-45 %, partial rollout by up to 80 %
(`rollsim.simulation.estimate_size(scenario)` returns it). A sweep refuses a runaway scenario before
running anything (`on_error="raise"`) or returns its rows with the error without running them and
without writing them to `out` (`on_error="record"`), so a rerun with a higher limit runs them.

## The table ({n} rows)

| # | category | input | error | message |
|---:|---|---|---|---|
"""


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "\\n")


def render() -> str:
    lines = [HEAD.replace("{n}", str(len(ROWS)))]
    for i, (category, code, kind, message) in enumerate(ROWS):
        lines.append(f"| {i} | {category} | `{cell(code)}` | `{kind}` | `{cell(message)}` |\n")
    return "".join(lines)


def main() -> int:
    path = ROOT / "docs" / "errors.md"
    text = render()
    if "--check" in sys.argv[1:]:
        if not path.exists() or path.read_text() != text:
            print(f"{path} is not current: run python scripts/gen_errors_doc.py")
            return 1
        return 0
    path.write_text(text)
    print(f"wrote {path} ({len(ROWS)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
