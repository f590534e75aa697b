"""Bad-input rows of the command line's names: a value the user gave as a flag is named by that
flag (``--max-staleness``, not ``pipeline.max_staleness``), for every command, the rest of the
message kept; a value from a scenario file keeps its key. Appended to ``tests/bad_inputs.py``'s
table (same format)."""

from __future__ import annotations

_ERR = "exit 2: rollsim: error: "
_HW = "cli('hardware', '--model', 'Qwen3-8B', '--gpu', 'H100', "
_SPLIT = "cli('split', '--gpus', '8', '--gpu-s-per-token', '1e-3', "

ROWS: list[tuple[str, str, str, str]] = [
    # ---------------------------------------------------------------- hardware: its own flags
    ("CLI names", _HW + "'--max-num-seqs', '0')", "CliExit", _ERR + "--max-num-seqs: must be in [1, 16777216], got 0"),
    ("CLI names", _HW + "'--gpu-memory-utilization', '2')", "CliExit",
     _ERR + "--gpu-memory-utilization: must be in (0, 1], got 2.0"),
    ("CLI names", _HW + "'--rollout-gpus=3', '--rollout-tp', '2')", "CliExit",
     _ERR + "--rollout-gpus: must be a multiple of --rollout-tp (2), got 3"),
    # ---------------------------------------------------------------- split and presets: scenario flags
    ("CLI names", _SPLIT + "'--max-staleness', '-1')", "CliExit", _ERR + "--max-staleness: must be in [0, 4294967295], got -1"),
    ("CLI names", _SPLIT + "'--group-size', '0')", "CliExit", _ERR + "--group-size: must be in [1, 16777216], got 0"),
    ("CLI names", "cli('presets', '--group-size', '0')", "CliExit", _ERR + "--group-size: must be in [1, 16777216], got 0"),
    # ---------------------------------------------------------------- run: flags, lengths flags, a file's keys
    ("CLI names", "cli('run', '--batch-size=0')", "CliExit", _ERR + "--batch-size: must be in [1, 16777216], got 0"),
    ("CLI names", "cli('compare', '--sigma', '-1')", "CliExit", _ERR + "--sigma: must be in [0, 10], got -1.0"),
    ("CLI names", "cli('run', '--lengths', 'deepseek-r1', '--max-tokens', '0')", "CliExit",
     _ERR + "--max-tokens: must be in [1, 2**40] tokens, got 0.0"),
    ("CLI names", "cli('run', toml('[pipeline]\\nkind = \"fully_async\"\\nmax_staleness = -1'), '--group-size', '4')",
     "CliExit", r"re:exit 2: rollsim: error: pipeline\.max_staleness: must be in \[0, 4294967295\], got -1 "
     r"\(the value in '.*s\.toml'\)"),
    ("CLI names", "cli('run', toml('[pipeline]\\nkind = \"fully_async\"\\nmax_staleness = -1'), '--max-staleness', '-2')",
     "CliExit", _ERR + "--max-staleness: must be in [0, 4294967295], got -2"),
]

_HOST_LINK = "dict(sync.chapter_cluster('parallel').to_dict()['hardware'], gpus_per_host_link={})"
ROWS += [
    # ---------------------------------------------------------------- the sync's host uplink share
    ("sync hardware", "sync.Hardware(gpus_per_host_link=0)", "ScenarioError", "gpus_per_host_link: must be in [1, 1024], got 0"),
    ("sync hardware", "sync.Hardware(gpus_per_host_link=2.0)", "ScenarioError",
     "gpus_per_host_link: must be an integer in [1, 1024], got float 2.0"),
    ("sync hardware", "cluster_from_dict({'model': {'preset': 'qwen3-4b'}, 'hardware': {'gpus_per_host_link': 2000}})",
     "ScenarioError", "hardware.gpus_per_host_link: must be in [1, 1024], got 2000"),
    ("sync hardware", "rollsim._rollsim.sync_estimate(dict(sync.chapter_cluster('parallel').to_dict(), hardware="
     + _HOST_LINK.format(0) + "))", "ScenarioError", "gpus_per_host_link: must be in [1, 1024], got 0"),
]
