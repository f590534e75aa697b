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
(`rollsim.ScenarioError`); a run-time limit raises `rollsim.RunLimitError` (below); the weight-sync cluster loader raises plain `ValueError`; a missing file
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

`simulate` and `sweep` estimate, before running, what a run would create
(`rollsim.simulation.estimate_size(scenario)` returns it): the samples it would start, the rollout
pool busy for the whole horizon, `rollout_slots x (horizon_s / seconds_per_answer + 1)` with
`seconds_per_answer = mean_tokens / decode_tokens_per_s` (+ prompt prefill), capped for batch
pipelines by the batches that can start (each needs at least its longest answer's generation, plus
the training step when synchronous) and for admission control and lag bounds by the training steps
(a step lasts `train_step_s + weight_sync_s + (train_s_per_token + logprob_s_per_token) x
batch_size x mean_tokens`); aborted answers add a pool per update; the events are about the samples
plus the steps. The estimate is within about 1 % for the chapter's scenario (17,865 vs 17,851
samples) and for other fully asynchronous configurations, within 10 % with a per-token training
cost; batch pipelines are over-estimated by 15-45 %, partial rollout by up to 80 %. A refused run
raises `rollsim.RunLimitError` (a `RuntimeError`, not bad input) whose message gives the estimate
and how to proceed; nothing has run.

* `record="samples"` (per-sample rows): the guard is on memory. Above `max_samples` (default
  50,000,000, about 9 GB: 185 bytes per sample for the engine's columns, the polars frame and one
  segment each, plus the per-step rows) the message starts with `max_samples:` and gives the memory;
  use `record="summary"`, shorten `horizon_s`, or raise `max_samples` (up to 2**32 - 1).
* `record="summary"`: memory is constant, so the guard is on run time. Above `max_events` (default
  1,000,000,000, about a minute at the engine's typical ~15 M events/s) the message starts with
  `max_events:` and says roughly how long the run would take; shorten `horizon_s`, or raise
  `max_events` (`None`: no limit). `max_samples` applies only when given (else the engine's 2**32 - 1:
  sample ids are 32-bit).

The engine also enforces `max_samples` exactly while running (`RunLimitError`, `max_samples: the run
would start more than N samples`). A sweep passes its `max_samples` (default 50,000,000) to every
run and refuses a runaway scenario before running anything (`on_error="raise"`) or returns its rows
with the error without running them and without writing them to `out` (`on_error="record"`), so a
rerun with a higher limit runs them.

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
