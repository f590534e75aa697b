"""Bad inputs a new user meets in the first hour (a length file's column name mistyped, on the command
line and in Python; a command, a choice, a data set or a length file's name mistyped) and the exact
error each gets; appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

_CSV = "'step,response_length\\n1,12\\n2,300\\n'"

ROWS: list[tuple[str, str, str, str]] = [
    # a near miss of a column name is named (the header was read right: no advice about it)
    ("length file", f"Empirical.from_file(write('two.csv', {_CSV}), 'response_lenght')", "ScenarioError",
     "re:lengths\\.column: no column 'response_lenght' in '.*/two\\.csv' \\(columns: \\['step', 'response_length'\\]\\); "
     "did you mean 'response_length'\\?"),
    ("length file", f"Empirical.from_file(write('two.csv', {_CSV}), 'response_length', count_column='stpe')",
     "ScenarioError",
     "re:lengths\\.count_column: no column 'stpe' in '.*/two\\.csv' \\(columns: \\['step', 'response_length'\\]\\); "
     "did you mean 'step'\\?"),
    ("CLI", f"cli('compare', '--lengths', write('two.csv', {_CSV}), '--lengths-column', 'response_lenght')", "CliExit",
     "re:exit 2: rollsim: error: --lengths-column: no column 'response_lenght' in '.*/two\\.csv' \\(columns: "
     "\\['step', 'response_length'\\]\\); did you mean 'response_length'\\?"),
    # a near miss of a command or a choice is named, in the command line's spelling (fully-async, not fully_async)
    ("CLI", "cli('runn')", "CliExit",
     "exit 2: rollsim: error: argument command: invalid choice: 'runn' (choose from 'compare', 'run', 'presets', "
     "'split', 'validate', 'sweep', 'sync', 'report', 'plot', 'hardware', 'import', 'calibrate', 'whatif'); "
     "did you mean 'run'?"),
    ("CLI", "cli('run', '--pipeline', 'fullyasync')", "CliExit",
     "exit 2: rollsim run: error: argument --pipeline: invalid choice: 'fullyasync' (choose from 'sync', 'one-step', "
     "'k-step', 'fully-async'); did you mean 'fully-async'?"),
    ("CLI", "cli('run', '--agentic-preset', 'sweagent')", "CliExit",
     "exit 2: rollsim run: error: argument --agentic-preset: invalid choice: 'sweagent' (choose from 'default', "
     "'code-interpreter-math', 'swe-agent', 'code_interpreter_math', 'swe_agent'); did you mean 'swe-agent'?"),
    ("CLI", "cli('run', '--kv-policy', 'holdd')", "CliExit",
     "exit 2: rollsim run: error: argument --kv-policy: invalid choice: 'holdd' (choose from 'keep', 'drop', 'hold'); "
     "did you mean 'hold'?"),
    ("CLI", "cli('plot', '.', '--kind', 'heatmp', '--out', 'x.png')", "CliExit",
     "exit 2: rollsim plot: error: argument --kind: invalid choice: 'heatmp' (choose from 'staleness-by-length', "
     "'slot-timeline', 'utilization', 'step-breakdown', 'heatmap', 'lines'); did you mean 'heatmap'?"),
    # --lengths: a near miss of a name or of a length file beside the one given
    ("CLI", "cli('run', '--lengths', 'deepseek')", "CliExit",
     "exit 2: rollsim: error: --lengths: no file 'deepseek'; did you mean 'deepseek-r1'? (give 'lognormal', a built-in "
     "data set: deepseek-r1, sky-t1, or a CSV/parquet file)"),
    ("CLI", "cli('compare', '--lengths', 'deepseek-r1-serving')", "CliExit",
     "exit 2: rollsim: error: --lengths: no file 'deepseek-r1-serving'; did you mean 'deepseek-r1'? (give 'lognormal', a "
     "built-in data set: deepseek-r1, sky-t1, or a CSV/parquet file)"),
    ("CLI", "cli('run', '--lengths', write('lens.csv', '100\\n200\\n').replace('lens.csv', 'lens.cvs'))", "CliExit",
     "re:exit 2: rollsim: error: --lengths: no file '(.*)/lens\\.cvs'; did you mean '\\1/lens\\.csv'\\? \\(give "
     "'lognormal', a built-in data set: deepseek-r1, sky-t1, or a CSV/parquet file\\)"),
    # a length file of several columns given as --lengths FILE: the flag that says which one
    ("CLI", f"cli('compare', '--lengths', write('two.csv', {_CSV}))", "CliExit",
     "exit 2: rollsim: error: --lengths-column: the file has columns ['step', 'response_length']; say which one holds "
     "the lengths (--lengths-column NAME)"),
    # a deployment without its accelerator: the flag to give, as the other deployment errors name theirs
    ("CLI", "cli('hardware', '--model', 'Qwen3-8B')", "CliExit",
     "exit 2: rollsim: error: --gpu: required with --model or --hf-config: the accelerator, e.g. H100 (rollsim "
     "hardware --list names the known ones)"),
    ("CLI", "cli('split', '--gpus', '8', '--model', 'Qwen3-8B')", "CliExit",
     "exit 2: rollsim: error: --gpu: required with --model or --hf-config: the accelerator, e.g. H100 (rollsim "
     "hardware --list names the known ones)"),
    # Scenario.replace names a near miss as Scenario(...) does
    ("scenario", "Scenario().replace(rollout_slot=4)", "ScenarioError",
     "re:rollout_slot: unknown scenario field; did you mean rollout_slots\\? \\(fields: \\['agentic', .*\\]\\)"),
    ("scenario", "Scenario().replace(**{'pipline.max_staleness': 2})", "ScenarioError",
     "re:pipline\\.max_staleness: unknown scenario field; did you mean pipeline\\.max_staleness\\? \\(fields: .*\\)"),
    # a sweep file's point that no scenario can be: the file named
    ("CLI", "cli('sweep', toml('[base]\\nhorizon_s = 600.0\\n[grid]\\nrollout_slots = [128, 0]\\n'), '--out', write('o', None))",
     "CliExit", "re:exit 2: rollsim: error: rollout_slots: must be in \\[1, 16777216\\], got 0 \\(in the sweep file "
     "'.*/s\\.toml'\\)"),
    # a what-if variant's pipeline: a near miss, or k-step without its K
    ("config", "rollsim.what_if.whatif(rollsim.calibrate(rollsim.configs.EXAMPLES / 'verl_grpo_metrics.csv', "
     "rollsim.configs.load(rollsim.configs.EXAMPLES / 'verl_grpo.yaml'), bootstrap=2), [{'pipeline': 'fully-asyn'}], draws=1)",
     "ScenarioError",
     "pipeline: must be 'sync', 'one-step', 'k-step:K', 'fully-async' or 'verl-fully-async' (verl's trainer cadence), "
     "or an imported verl fully_async config, got 'fully-asyn'; did you mean 'fully-async'?"),
    ("config", "rollsim.what_if.whatif(rollsim.calibrate(rollsim.configs.EXAMPLES / 'verl_grpo_metrics.csv', "
     "rollsim.configs.load(rollsim.configs.EXAMPLES / 'verl_grpo.yaml'), bootstrap=2), [{'pipeline': 'k-step'}], draws=1)",
     "ScenarioError",
     "pipeline: must be 'sync', 'one-step', 'k-step:K', 'fully-async' or 'verl-fully-async' (verl's trainer cadence), "
     "or an imported verl fully_async config, got 'k-step'; did you mean 'k-step:K', with K the batches generation "
     "may run ahead (k-step:2)?"),
    # async is closest in letters to sync: the pipeline meant is fully-async
    ("CLI", "cli('run', '--pipeline', 'async')", "CliExit",
     "exit 2: rollsim run: error: argument --pipeline: invalid choice: 'async' (choose from 'sync', 'one-step', "
     "'k-step', 'fully-async'); did you mean 'fully-async'?"),
    ("CLI", "cli('split', '--gpus', '8', '--gpu-s-per-token', '1e-3', '--pipeline', 'Asynchronous')", "CliExit",
     "exit 2: rollsim split: error: argument --pipeline: invalid choice: 'Asynchronous' (choose from 'sync', 'one-step', "
     "'fully-async'); did you mean 'fully-async'?"),
]
