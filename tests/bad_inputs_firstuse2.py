"""Bad-input rows of a new user's second tryout (appended to ``tests/bad_inputs.py``'s table; same
format): ``rollsim sweep``'s own flags are named as flags (``--chunk-size``, not ``chunk_size``);
an unknown key of a TOML file names the file it is in (scenario files, ``Scenario.from_toml``,
sweep files), still listing the allowed keys."""

from __future__ import annotations

_SCENARIO_KEYS = (r"\['agentic', 'batch_size', 'clear_cache_on_update', 'decode_s_per_context_token', "
                  r"'decode_slowdown_per_seq', 'decode_throughput_table', 'decode_tokens_per_s', 'group_size', "
                  r"'horizon_s', 'kv_cache_tokens', 'length_drift', 'lengths', 'logprob_s_per_token', "
                  r"'max_num_batched_tokens', 'pipeline', 'prefill_mode', 'prefill_tokens_per_s', 'prefix_sharing', "
                  r"'prompt_tokens', 'rng', 'rollout_pause_s', 'rollout_slots', 'seed', 'slots_per_instance', "
                  r"'staleness_check', 'sync_every', 'train', 'train_s_per_token', 'train_step_s', 'weight_sync', "
                  r"'weight_sync_s'\]")

ROWS: list[tuple[str, str, str, str]] = [
    # rollsim sweep: the flags' names, checked before the sweep file is read
    ("CLI", "cli('sweep', toml('seeds = [0]'), '--out', write('o', None), '--chunk-size', '0')", "CliExit",
     "exit 2: rollsim: error: --chunk-size: must be an integer in [1, 10000000], got 0"),
    ("CLI", "cli('sweep', toml('seeds = [0]'), '--out', write('o', None), '--threads', '-1')", "CliExit",
     "exit 2: rollsim: error: --threads: must be an integer in [0, 4096], got -1"),
    ("CLI", "cli('sweep', 'nonexistent-sweep.toml', '--out', write('o', None), '--threads', '5000')", "CliExit",
     "exit 2: rollsim: error: --threads: must be an integer in [0, 4096], got 5000"),
    # an unknown key names its file (the temporary directory's path varies: matched by a regex)
    ("scenario TOML", "cli('run', write('t.toml', 'rollout_slot = 512'))", "CliExit",
     f"re:exit 2: rollsim: error: rollout_slot: unknown key in '[^']*/t\\.toml'; did you mean rollout_slots\\? \\(allowed: {_SCENARIO_KEYS}\\)"),
    ("scenario TOML", "cli('compare', write('t.toml', '[lengths]\\nmuu = 6.0'))", "CliExit",
     "re:exit 2: rollsim: error: lengths\\.muu: unknown key in '[^']*/t\\.toml'; did you mean mu\\? \\(allowed: \\['group_correlation', "
     "'kind', 'max_tokens', 'mu', 'sigma'\\]\\)"),
    ("scenario TOML", "Scenario.from_toml(write('t.toml', '[pipeline]\\nkind = \"fully_async\"\\ncap = 2'))",
     "ScenarioError", "re:pipeline\\.cap: unknown key in '[^']*/t\\.toml' \\(allowed: \\[.*'max_staleness'.*\\]\\)"),
    ("sweep TOML", "cli('sweep', toml('seeds = [0]\\n[base]\\nrollout_slot = 3'), '--out', write('o', None))",
     "CliExit",
     f"re:exit 2: rollsim: error: base\\.rollout_slot: unknown key in '[^']*/s\\.toml'; did you mean rollout_slots\\? \\(allowed: {_SCENARIO_KEYS}\\)"),
    # a TOML text has no file to name
    ("scenario TOML", "Scenario.from_toml_str('rollout_slot = 512')", "ScenarioError",
     f"re:rollout_slot: unknown key; did you mean rollout_slots\\? \\(allowed: {_SCENARIO_KEYS}\\)"),
]
