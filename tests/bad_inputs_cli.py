"""Bad-input rows of the command line and of scenario files (format: the top of tests/bad_inputs.py)."""

from __future__ import annotations

_FIELDS = ("['agentic', 'batch_size', 'clear_cache_on_update', 'decode_s_per_context_token', 'decode_slowdown_per_seq', "
           "'decode_throughput_table', 'decode_tokens_per_s', 'group_size', 'horizon_s', 'kv_cache_tokens', 'length_drift', "
           "'lengths', 'logprob_s_per_token', 'max_num_batched_tokens', 'pipeline', 'prefill_mode', 'prefill_tokens_per_s', "
           "'prefix_sharing', 'prompt_tokens', 'rng', 'rollout_pause_s', 'rollout_slots', 'seed', 'slots_per_instance', "
           "'staleness_check', 'sync_every', 'train', 'train_s_per_token', 'train_step_s', 'weight_sync', 'weight_sync_s']")
_ERR = "exit 2: rollsim: error: "
_SOURCES = "(give 'lognormal', a built-in data set: deepseek-r1, sky-t1, or a CSV/parquet file)"

ROWS: list[tuple[str, str, str, str]] = [
    # ---------------------------------------------------------------- scenario files (TOML)
    ("scenario TOML", "Scenario.from_toml_str('speed = 3')", "ScenarioError", f"speed: unknown key; did you mean seed? (allowed: {_FIELDS})"),
    ("scenario TOML", "Scenario.from_toml_str('[pipeline]\\nkind = \"fully_async\"\\ncap = 2')", "ScenarioError",
     "pipeline.cap: unknown key (allowed: ['admission_eta', 'batch_order', 'kind', 'lag_release', "
     "'max_lag_samples', 'max_ready_groups', 'max_staleness', 'on_stale', 'on_update'])"),
    ("scenario TOML", "Scenario.from_toml_str('[pipeline]\\nkind = \"one_step\"\\nk = 2')", "ScenarioError",
     "pipeline.k: applies to kind 'off_policy' only, not 'one_step'"),
    ("scenario TOML", "Scenario.from_toml_str('[pipeline]\\nmax_staleness = 2')", "ScenarioError",
     "pipeline.kind: must be 'synchronous', 'one_step', 'off_policy' or 'fully_async', got None"),
    ("scenario TOML", "Scenario.from_toml_str('[lengths]\\nmu = 7.0\\ncolumn = \"x\"')", "ScenarioError",
     "lengths.column: unknown key (allowed: ['group_correlation', 'kind', 'max_tokens', 'mu', 'sigma'])"),
    ("scenario TOML", "Scenario.from_toml_str('[lengths]\\nkind = \"empirical\"')", "ScenarioError",
     "lengths.values: an empirical distribution needs values = [...]"),
    ("scenario TOML", "Scenario.from_toml_str('[pipeline]\\nkind = \"fully_async\"\\nbatch_order = { kind = \"fifo\" }')",
     "ScenarioError", "pipeline.batch_order.kind: must be 'length_balanced' in a batch_order table, got 'fifo'"),
    ("scenario TOML", "Scenario.from_toml_str('[pipeline]\\nkind = \"fully_async\"\\nbatch_order = { edges = [1.0], n = 1 }')",
     "ScenarioError", "pipeline.batch_order.n: unknown key (allowed: ['edges', 'kind', 'quotas', 'share'])"),
    ("scenario TOML", "Scenario.from_toml_str('rollout_slots = 1' + '0' * 400)", "ScenarioError",
     "rollout_slots: must be an integer of at most 20 digits, got one of 401 digits"),
    ("scenario TOML", "Scenario.from_toml_str('[lengths]\\nkind = \"empirical\"\\nvalues = [5, 1' + '0' * 400 + ']')",
     "ScenarioError", "lengths.values[1]: must be an integer of at most 20 digits, got one of 401 digits"),
    ("scenario TOML", "Scenario.from_toml_str('rollout_slots = [')", "ScenarioError",
     "re:text: the text is not valid TOML: .*"),
    ("scenario TOML", "Scenario.from_toml_str(b'rollout_slots = 8')", "ScenarioError",
     "text: must be a str of TOML, got bytes"),
    ("scenario TOML", "Scenario.from_toml(os.path.dirname(write('x', '')))", "ScenarioError",
     "re:scenario file: '.*' is a directory, not a TOML file"),
    ("scenario TOML", "Scenario.from_toml(write('s.toml', b'a = 1\\n\\xff'))", "ScenarioError",
     "re:scenario file: '.*s\\.toml' is not UTF-8 text \\(line 2, byte offset 6: b'\\\\xff'\\)"),
    ("scenario TOML", "Scenario.from_toml(write('none.toml', None))", "FileNotFoundError",
     "re:\\[Errno 2\\] No such file or directory: '.*none\\.toml'"),
    ("scenario TOML", "Scenario(lengths=Empirical([1.0, 2.0], groups=[b'a', b'b'])).to_toml()", "ScenarioError",
     "lengths.groups[0]: cannot be written to TOML: bytes b'a'"),
    ("scenario TOML", "sweep_config.load(toml('[base]\\npipeline = { kind = \"fully_async\", on_update = \"x\" }'))",
     "ScenarioError", "pipeline.on_update: must be one of continue, abort_drop, abort_resubmit, wait, keep_recompute, "
                      "keep_stale; got 'x'"),
    ("scenario TOML", "sweep_config.load(toml('[base]\\nseed = 1' + '0' * 30))", "ScenarioError",
     "base.seed: must be an integer of at most 20 digits, got one of 31 digits"),
    ("scenario TOML", "sweep_config.load(toml('seeds = 1' + '0' * 400))", "ScenarioError",
     "seeds: must be an integer of at most 20 digits, got one of 401 digits"),
    ("scenario TOML", "Scenario.from_toml_str('[lengths]\\nfile = \"' + os.path.dirname(write('x', '')) + '\"')",
     "ScenarioError", "re:lengths\\.path: must name a \\.csv, \\.csv\\.gz or \\.parquet file \\(any case\\), got '.*'"),
    ("scenario TOML", "sweep_config.load(os.path.dirname(write('x', '')))", "ScenarioError",
     "re:sweep file: '.*' is a directory, not a TOML file"),
    # ---------------------------------------------------------------- command line: flags that do not apply
    ("CLI", "cli('run', '--lengths-column', 'tokens')", "CliExit",
     _ERR + "--lengths-column applies to --lengths FILE only, not lognormal lengths"),
    ("CLI", "cli('compare', '--lengths', 'deepseek-r1', '--count-column', 'n')", "CliExit",
     _ERR + "--count-column applies to --lengths FILE only, not the data set 'deepseek-r1'"),
    ("CLI", "cli('run', '--lengths', 'deepseek-r1', '--mu', '7')", "CliExit",
     _ERR + "--mu applies to --lengths lognormal only, not the data set 'deepseek-r1'"),
    ("CLI", "cli('run', '--lengths', write('l.csv', 'tokens\\n100\\n'), '--group-correlation', '0.5')", "CliExit",
     "re:" + _ERR + "--group-correlation applies to --lengths lognormal only, not the "
                    "file '.*l\\.csv'"),
    ("CLI", "cli('run', '--k', '2')", "CliExit", _ERR + "--k applies to --pipeline k-step only, not fully-async"),
    ("CLI", "cli('run', '--pipeline', 'sync', '--on-update', 'wait')", "CliExit",
     _ERR + "--on-update applies to --pipeline fully-async only, not sync"),
    ("CLI", "cli('run', '--keep-partial')", "CliExit",
     _ERR + "--keep-partial applies to --pipeline sync or --pipeline one-step or --pipeline "
            "k-step only, not fully-async"),
    ("CLI", "cli('run', '--batch-order-edges', '1000,8000')", "CliExit",
     _ERR + "--batch-order-edges applies to --batch-order length_balanced only, not 'fifo'"),
    ("CLI", "cli('run', '--pipeline', 'one-step', '--batch-order-share', '0.5')", "CliExit",
     _ERR + "--batch-order-share applies to --pipeline fully-async only, not one-step"),
    ("CLI", "cli('run', toml('[pipeline]\\nkind = \"fully_async\"\\nadmission_eta = 1'), '--pipeline', 'k-step')",
     "CliExit", _ERR + "--pipeline k-step replaces the scenario file's 'fully_async' pipeline, whose "
                       "admission_eta would be lost (k-step pipelines have no such field): remove it from the file"),
    ("CLI", "cli('compare', toml('[pipeline]\\nkind = \"fully_async\"\\nmax_staleness = 3'))", "CliExit",
     _ERR + "pipeline: compare runs its own four pipelines (synchronous, one-step, fully async, fully async with cap "
            "--max-staleness); the scenario file's pipeline FullyAsync(max_staleness=3) would be ignored: remove it "
            "from the file, or use rollsim run"),
    ("CLI", "cli('presets', '--max-staleness', '2')", "CliExit",
     "exit 2: rollsim presets: error: argument --max-staleness: presets runs each system's own pipeline (and "
     "synchronous and fully async); give a pipeline's flags to rollsim run"),
    ("CLI", "cli('run', '--decode-throughput-table', '1-30')", "CliExit",
     "exit 2: rollsim run: error: argument --decode-throughput-table: invalid N:TOKENS_PER_S pairs (or none) value: "
     "'1-30'"),
    ("CLI", "cli('run', '--batch-order', 'length_balanced', '--batch-order-quotas', '1,x')", "CliExit",
     "exit 2: rollsim run: error: argument --batch-order-quotas: invalid comma-separated int (or none) value: '1,x'"),
    # ---------------------------------------------------------------- command line: files and --out
    ("CLI", "cli('run', os.path.dirname(write('x', '')))", "CliExit",
     "re:" + _ERR + "scenario file: '.*' is a directory, not a TOML file"),
    ("CLI", "cli('compare', write('s.toml', b'\\xef\\xbb\\xbfrollout_slots = 0'))", "CliExit",
     _ERR + "rollout_slots: must be in [1, 16777216], got 0"),
    ("CLI", "cli('run', write('s.toml', 'rollout_slots = 8\\n\\xe9'.encode('latin-1')))", "CliExit",
     "re:" + _ERR + "scenario file: '.*s\\.toml' is not UTF-8 text \\(line 2, byte offset 18: b'\\\\xe9'\\)"),
    ("CLI", "cli('run', toml('batch_size = 1' + '0' * 399))", "CliExit",
     r"re:exit 2: rollsim: error: batch_size: must be an integer of at most 20 digits, got one of 400 digits "
     r"\(the value in '.*s\.toml'\)"),
    ("CLI", "cli('run', '--lengths', os.path.dirname(write('x', '')))", "CliExit",
     "re:" + _ERR + "--lengths: must name a \\.csv, \\.csv\\.gz or \\.parquet file \\(any case\\), got '.*'"),
    ("CLI", "cli('run', '--out', write('f', 'x'))", "CliExit", "re:" + _ERR + "--out: '.*/f' exists and is not a directory"),
    ("CLI", "cli('compare', '--out', write('f', 'x') + '/sub')", "CliExit",
     "re:" + _ERR + "--out: cannot write to the directory '.*/f/sub': Not a directory"),
    ("CLI", "cli('run', '--out', '')", "CliExit", _ERR + "--out must name a directory, got ''"),
    ("CLI", "cli('sync', write('c.toml', b'[model]\\n\\xff'))", "CliExit",
     "re:" + _ERR + "cluster file: '.*c\\.toml' is not UTF-8 text \\(line 2, byte offset 8: b'\\\\xff'\\)"),
    ("CLI", "cli('sync', toml('fanout = 1' + '0' * 400 + '\\n[model]\\npreset = \"qwen3-4b\"'))", "CliExit",
     _ERR + "fanout: must be an integer of at most 20 digits, got one of 401 digits"),
    ("CLI", "cli('sweep', os.path.dirname(write('x', '')), '--out', write('o', None))", "CliExit",
     "re:" + _ERR + "sweep file: '.*' is a directory, not a TOML file"),
    # prefixes are not expanded: --kv-cache (like --k once) was taken for --kv-cache-tokens
    ("CLI", "cli('compare', '--kv-cache', '3')", "CliExit", "exit 2: rollsim: error: unrecognized arguments: --kv-cache"),
    ("CLI", "cli('run', '--horizon', '100')", "CliExit", "exit 2: rollsim: error: unrecognized arguments: --horizon (--horizon: did you mean --horizon-s?)"),
    ("CLI", "cli('split', '--gpus', '16', '--gpu-s-per-token', '0.004', '--pipeline', 'sync', '--max-staleness', '2')",
     "CliExit", "exit 2: rollsim: error: --max-staleness applies to --pipeline fully-async "
                "only, not sync"),
    ("CLI", "cli('split', '--gpus', '100000', '--gpu-s-per-token', '0.004')", "CliExit",
     "re:exit 2: rollsim: error: --max-events: the 99999 splits would process about .* events \\(about .*\\), more "
     "than --max-events = 1000000000; give fewer --gpus or a larger --gpus-per-instance, a shorter --horizon-s, or "
     "raise --max-events \\(0: no limit\\)"),
    ("CLI", "cli('run', 'nonexistent.toml')", "CliExit",
     "exit 2: rollsim: error: no such file or directory: 'nonexistent.toml'"),
    # report / plot check --out before reading or drawing anything
    ("CLI", "cli('plot', write('r', None), '--kind', 'utilization', '--out', write('f', 'x') + '/x.png')", "CliExit",
     "re:exit 2: rollsim: error: --out: cannot make the directory '.*/f' for 'x\\.png': '.*/f' is a file"),
    ("CLI", "cli('report', write('r', None), '--out', os.path.dirname(write('x', '')))", "CliExit",
     "re:exit 2: rollsim: error: --out: '.*' is a directory; give a file name"),
    ("CLI", "cli('compare', '--horizon-s', '600', '--out', os.path.dirname(write('summary.json', '{}')))", "CliExit",
     "re:exit 2: rollsim: error: --out: '.*' holds the results of `rollsim run` \\(summary.json\\); writing "
     "`rollsim compare` results there would mix two runs: give another directory or remove those files"),
    ("CLI", "cli('run', '--horizon-s', '600', '--out', os.path.dirname(write('compare.parquet', '')))", "CliExit",
     "re:exit 2: rollsim: error: --out: '.*' holds the results of `rollsim compare` \\(compare.parquet\\); writing "
     "`rollsim run` results there would mix two runs: give another directory or remove those files"),
]
