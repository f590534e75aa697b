"""Bad-input rows of the whatif / run / validate / split fixes (appended to ``tests/bad_inputs.py``'s
table; same format): ``--out`` over a previous run's results of the same command is refused unless
``--force`` (``sweep --out`` resumes instead)."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    ("out dir", "cli('run', '--horizon-s', '60', '--out', os.path.dirname(write('summary.json', '{}')))", "CliExit",
     r"re:exit 2: rollsim: error: --out: '.*' already holds the results of a previous `rollsim run` "
     r"\(summary\.json\); give --force to replace them, or another directory"),
    ("out dir", "cli('compare', '--horizon-s', '60', '--out', os.path.dirname(write('samples_synchronous.parquet', '')))",
     "CliExit", r"re:exit 2: rollsim: error: --out: '.*' already holds the results of a previous `rollsim compare` "
     r"\(samples_synchronous\.parquet\); give --force to replace them, or another directory"),
]
