"""Bad-input rows of a new user's last tryout (appended to ``tests/bad_inputs.py``'s table; same
format): a bad value in a scenario file names the file and ``--out`` refuses a sweep's directory."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    ("TOML file", "cli('run', toml('rollout_slots = 0\\n'))", "CliExit",
     r"re:exit 2: rollsim: error: rollout_slots: must be in \[1, 16777216\], got 0 \(the value in '.*s\.toml'\)"),
    ("TOML file", "cli('run', toml('[pipeline]\\nkind = \"fully_async\"\\nmax_staleness = -1\\n'))", "CliExit",
     r"re:exit 2: rollsim: error: pipeline\.max_staleness: must be in \[0, 4294967295\], got -1 "
     r"\(the value in '.*s\.toml'\)"),
    # the flag's value replaces the file's: the message names the flag, not the file
    ("TOML file", "cli('run', toml('rollout_slots = 8\\n'), '--rollout-slots', '0')", "CliExit",
     "exit 2: rollsim: error: --rollout-slots: must be in [1, 16777216], got 0"),
]

# --out into a sweep's directory would leave a run's files among its chunks (it would then read as a run)
ROWS += [
    ("out dir", "cli('run', '--out', os.path.dirname(write('_rollsim_sweep.json', '{}')), '--horizon-s', '60')",
     "CliExit", r"re:exit 2: rollsim: error: --out: '.*' holds the results of `rollsim sweep` \(_rollsim_sweep\.json\); "
     r"writing `rollsim run` results there would mix two runs: give another directory or remove those files"),
    ("out dir", "cli('compare', '--out', os.path.dirname(write('_rollsim_sweep.lock', '')), '--horizon-s', '60')",
     "CliExit", r"re:exit 2: rollsim: error: --out: '.*' holds the results of `rollsim sweep` \(_rollsim_sweep\.lock\); "
     r"writing `rollsim compare` results there would mix two runs: give another directory or remove those files"),
]

