"""Bad-input rows found by trying rollsim as a new user would (appended to ``tests/bad_inputs.py``'s
table; same format): a near miss of a command's own flag names the flag it likely meant; a flag
that is no near miss gets no hint (flags are never abbreviated, nothing is taken for another);
``rollsim plot`` refuses a flag that the figure's kind does not use, before reading anything."""

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
    # rollsim plot: a flag of another kind is refused, not dropped
    ("CLI", "cli('plot', write('r', None), '--kind', 'staleness-by-length', '--bin-s', '30', '--out', 'f.png')",
     "CliExit", "exit 2: rollsim: error: --bin-s: applies to --kind utilization only, not staleness-by-length"),
    ("CLI", "cli('plot', write('r', None), '--kind', 'heatmap', '--metric', 'steps', '--x', 'seed', '--y', 'seed', "
     "'--hue', 'seed', '--out', 'f.png')", "CliExit",
     "exit 2: rollsim: error: --hue: applies to --kind lines only, not heatmap"),
    ("CLI", "cli('plot', write('r', None), '--kind', 'utilization', '--max-slots', '8', '--out', 'f.png')", "CliExit",
     "exit 2: rollsim: error: --max-slots: applies to --kind slot-timeline only, not utilization"),
    ("CLI", "cli('plot', write('r', None), '--kind', 'lines', '--pipeline', 'fully_async', '--out', 'f.png')",
     "CliExit", "exit 2: rollsim: error: --pipeline: applies to --kind staleness-by-length / slot-timeline / "
     "utilization / step-breakdown only, not lines"),
    # rollsim sync says a missing file as every other command does (not "[Errno 2] ...")
    ("CLI", "cli('sync', 'nonexistent-cluster.toml')", "CliExit",
     "exit 2: rollsim: error: no such file or directory: 'nonexistent-cluster.toml'"),
    # rollsim validate --case: the error names the flag (the Python functions name their argument, names)
    ("CLI", "cli('validate', '--case', 'nosuch')", "CliExit",
     "exit 2: rollsim: error: --case: unknown case 'nosuch'; cases: chapter, verl_one_step_fsdp2, "
     "verl_one_step_megatron, verl_fully_async_32, verl_fully_async_64, verl_fully_async_128, verl_staleness_0, "
     "verl_staleness_0_1, verl_staleness_0_3, verl_staleness_0_5"),
    ("CLI", "cli('validate', '--resources', '--case', 'chapter')", "CliExit",
     "exit 2: rollsim: error: --case: unknown case 'chapter' for --resources (deployment rebuilds cover the verl "
     "cases); cases: verl_one_step_fsdp2, verl_one_step_megatron, verl_fully_async_32, verl_fully_async_64, "
     "verl_fully_async_128, verl_staleness_0, verl_staleness_0_1, verl_staleness_0_3, verl_staleness_0_5"),
]
