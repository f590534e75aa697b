"""Bad-input rows of a new user's tryout (appended to ``tests/bad_inputs.py``'s table; same format): a
pipeline key of another kind in a scenario file says which kinds have it and names the file; a
decode-throughput table whose speed at one sequence differs from an unset ``decode_tokens_per_s``
says what to give; a header-only lengths CSV names the flag and the file; an empty sweep file is
refused; messages name what the user typed (flags, ``inf``, the value as given)."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    ("scenario TOML", "cli('run', write('imposs.toml', '[pipeline]\\nkind = \"synchronous\"\\nmax_staleness = 2'))",
     "CliExit", r"re:exit 2: rollsim: error: pipeline\.max_staleness: applies to kind 'fully_async' only, not "
                r"'synchronous' \(in '[^']*/imposs\.toml'\)"),
    ("scenario TOML", "Scenario.from_toml(write('t.toml', '[pipeline]\\nkind = \"fully_async\"\\nover_sampling = 2'))",
     "ScenarioError", r"re:pipeline\.over_sampling: applies to kind 'synchronous' or 'one_step' or 'off_policy' only, "
                      r"not 'fully_async' \(in '[^']*/t\.toml'\)"),
    ("sweep TOML", "cli('sweep', toml('seeds = [0]\\n[base.pipeline]\\nkind = \"one_step\"\\nk = 2'), '--out', "
                   "write('o', None))",
     "CliExit", r"re:exit 2: rollsim: error: base\.pipeline\.k: applies to kind 'off_policy' only, not 'one_step' "
                r"\(in '[^']*/s\.toml'\)"),
    # a decode table given without decode_tokens_per_s: the speed to give, by flag or key (never derived)
    ("CLI", "cli('run', '--decode-throughput-table', '1:40,64:1000', '--slots-per-instance', '64')", "CliExit",
     "exit 2: rollsim: error: --decode-throughput-table: its speed at one sequence (40.0 tokens/s) must equal "
     "--decode-tokens-per-s, which is not given (default 30.0): give --decode-tokens-per-s 40.0 too"),
    ("CLI", "cli('run', toml('decode_tokens_per_s = 35.0\\nslots_per_instance = 64'), '--decode-throughput-table', "
            "'1:40,64:1000')", "CliExit",
     "exit 2: rollsim: error: --decode-throughput-table: its speed at one sequence (40.0 tokens/s) must equal "
     "--decode-tokens-per-s, which is not given (the scenario file's 35.0): give --decode-tokens-per-s 40.0 too"),
    ("CLI", "cli('run', '--decode-throughput-table', '1:40,64:1000', '--slots-per-instance', '64', "
            "'--decode-tokens-per-s', '30')", "CliExit",
     "exit 2: rollsim: error: --decode-tokens-per-s: must equal decode_throughput_table's speed at one sequence "
     "(40.0 tokens/s) when the table is set, got 30.0"),
    ("scenario TOML", "Scenario.from_toml_str('slots_per_instance = 8\\ndecode_throughput_table = [[1, 60.0], [8, 200.0]]')",
     "ScenarioError", "decode_throughput_table: its speed at one sequence (60.0 tokens/s) must equal decode_tokens_per_s, "
                      "which is not given (default 30.0): give decode_tokens_per_s = 60.0 too"),
    # a lengths file with a header and no data: the flag and the file named (as other CSV errors do)
    ("lengths file", "cli('run', '--lengths', write('hdr.csv', 'tokens\\n'), '--lengths-column', 'tokens')", "CliExit",
     r"re:exit 2: rollsim: error: --lengths: '[^']*/hdr\.csv' has no rows of data \(only a header: tokens\): it must "
     r"hold at least one length"),
    ("lengths file", "Empirical.from_file(write('h.parquet', parquet({'t': pl.Series([], dtype=pl.Int64)})))",
     "ScenarioError", r"re:lengths\.path: '[^']*/h\.parquet' has no rows of data: it must hold at least one length"),
    # an empty sweep file has nothing to sweep
    ("sweep TOML", "cli('sweep', toml('# nothing yet\\n'), '--out', write('o', None))", "CliExit",
     r"re:exit 2: rollsim: error: sweep file: '[^']*/s\.toml' is empty: give the axes to sweep \(\[grid\] or \[sample\], "
     r"seeds = \[\.\.\.\]\) and the \[base\] scenario they vary"),
    # messages in the user's terms: a flag once, inf (not math.inf), the path typed, the value as given
    ("config CLI", "cli('whatif', '--config', os.path.join(ROOT, 'python/rollsim/examples/configs/verl_fully_async.sh'), "
                   "'--metrics', os.path.join(ROOT, 'python/rollsim/examples/configs/verl_fully_async_metrics.csv'), "
                   "'--max-staleness', '1,x')", "CliExit",
     "exit 2: rollsim whatif: error: argument --max-staleness: must be integers >= 0 or 'none' separated by commas, "
     "got '1,x'"),
    ("CLI", "cli('run', '--pipeline', 'sync', '--over-sampling', '-1')", "CliExit",
     "exit 2: rollsim: error: --over-sampling: must be in [0, 1e6], or inf (keep every slot busy), got -1.0"),
    ("CLI", "cli('run', toml('prefill_tokens_per_s = 0'))", "CliExit",
     r"re:exit 2: rollsim: error: prefill_tokens_per_s: must be in \[1e-6, 1e12\] tokens/s, or inf \(free prefill\), "
     r"got 0 \(the value in '[^']*/s\.toml'\)"),
    ("CLI", "cli('report', os.path.join(write('d', None), 'nonexist_dir'))", "CliExit",
     r"re:exit 2: rollsim: error: no such file or directory: '[^']*/d/nonexist_dir'"),
    ("hardware", "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=1).decode_tokens_per_s("
                 "batch=0, context_tokens=1000.0)", "ScenarioError", "batch: must be finite and > 0, got 0"),
]
