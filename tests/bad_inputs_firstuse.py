"""Bad-input rows found by trying rollsim as a new user would (appended to ``tests/bad_inputs.py``'s
table; same format): a near miss of a command's own flag names the flag it likely meant; a flag
that is no near miss gets no hint (flags are never abbreviated, nothing is taken for another)."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    ("CLI", "cli('run', '--rollout-slot', '512')", "CliExit",
     "exit 2: rollsim: error: unrecognized arguments: --rollout-slot (--rollout-slot: did you mean --rollout-slots?)"),
    ("CLI", "cli('run', '--max-stalenes=2')", "CliExit",
     "exit 2: rollsim: error: unrecognized arguments: --max-stalenes=2 (--max-stalenes: did you mean --max-staleness?)"),
    ("CLI", "cli('split', '--gpus', '4', '--gpu-s-per-tokens', '0.004')", "CliExit",
     "exit 2: rollsim: error: unrecognized arguments: --gpu-s-per-tokens 0.004 (--gpu-s-per-tokens: did you mean "
     "--gpu-s-per-token?)"),
    ("CLI", "cli('compare', '--kv', '3')", "CliExit", "exit 2: rollsim: error: unrecognized arguments: --kv"),
]
