"""Bad-input rows of a new user's wording review (appended to ``tests/bad_inputs.py``'s table; same
format): an unknown key of a scenario TOML file, top-level or in a table, suggests the closest
allowed key ("did you mean ...?", as the command line does for flags) before listing the allowed
ones; ``--model`` / ``--gpu`` with an unknown name say what the flags accept (the registry's names,
the closest one, a Hugging Face id or ``--hf-config``), not a Python type."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    # a typo of a key: the closest allowed key, top-level and in the [pipeline] / [lengths] tables
    ("scenario TOML", "Scenario.from_toml_str('horizon = 600.0')", "ScenarioError",
     "re:horizon: unknown key; did you mean horizon_s\\? \\(allowed: \\['agentic', .*\\]\\)"),
    ("scenario TOML", "Scenario.from_toml_str('[pipeline]\\nkind = \"fully_async\"\\nmax_stalenes = 2')",
     "ScenarioError",
     "pipeline.max_stalenes: unknown key; did you mean max_staleness? (allowed: ['admission_eta', 'batch_order', "
     "'kind', 'lag_release', 'max_lag_samples', 'max_ready_groups', 'max_staleness', 'on_stale', 'on_update'])"),
    ("scenario TOML", "cli('run', write('t.toml', '[lengths]\\nsigm = 2.0'))", "CliExit",
     "re:exit 2: rollsim: error: lengths\\.sigm: unknown key in '[^']*/t\\.toml'; did you mean sigma\\? "
     "\\(allowed: \\['group_correlation', 'kind', 'max_tokens', 'mu', 'sigma'\\]\\)"),
    # no allowed key is close: no suggestion
    ("scenario TOML", "Scenario.from_toml_str('[pipeline]\\nkind = \"fully_async\"\\nwindow = 2')", "ScenarioError",
     "pipeline.window: unknown key (allowed: ['admission_eta', 'batch_order', 'kind', 'lag_release', "
     "'max_lag_samples', 'max_ready_groups', 'max_staleness', 'on_stale', 'on_update'])"),
    # --model / --gpu: the closest known name, the known names, and how to give another model
    ("hardware", "cli('hardware', '--model', 'Qwen3-8', '--gpu', 'H100')", "CliExit",
     "re:exit 2: rollsim: error: --model: unknown model 'Qwen3-8'; did you mean Qwen3-8B\\? \\(known, "
     "case-insensitive, also as a Hugging Face id such as Qwen/Qwen3-8B or an -Instruct variant: Qwen2\\.5-0\\.5B, "
     ".*, gpt-oss-120b; another model: its Hugging Face config\\.json, read by "
     "rollsim\\.hardware\\.model_from_hf_config \\(rollsim hardware / split: --hf-config FILE\\)\\)"),
    ("hardware", "cli('split', '--gpus', '16', '--model', write('config.json', '{}'), '--gpu', 'H100')", "CliExit",
     "re:exit 2: rollsim: error: --model: unknown model '[^']*/config\\.json' \\(known, .*; a file is read as a "
     "Hugging Face config\\.json by rollsim\\.hardware\\.model_from_hf_config \\(rollsim hardware / split: "
     "--hf-config FILE\\)\\)"),
    ("hardware", "cli('hardware', '--model', 'Qwen3-8B', '--gpu', 'H100X')", "CliExit",
     "exit 2: rollsim: error: --gpu: unknown accelerator 'H100X'; did you mean H100? (known, case-insensitive: H100, "
     "H800, H200, H20, A100-40G, A100-80G, A800, L20, L40S, B200, GB200, MI300X, Ascend-910B; rollsim hardware --list "
     "gives their specs)"),
    ("hardware", "rollsim.hardware.model(8)", "ScenarioError",
     "model: must be a model's name or a rollsim.hardware.ModelSpec, got int 8"),
    # the [agentic] table and Python keywords (their dataclasses' fields) suggest the closest field too
    ("agentic", "Scenario.from_toml_str('[agentic]\\nmax_turn = 3')", "ScenarioError",
     "re:agentic\\.max_turn: unknown field of Agentic; did you mean max_turns\\? \\(fields: \\[.*'max_turns'.*\\]\\)"),
    ("scenario", "Scenario().replace(**{'pipeline.max_stalenes': 2})", "ScenarioError",
     "pipeline.max_stalenes: unknown field of FullyAsync; did you mean max_staleness? (fields: ['admission_eta', "
     "'batch_order', 'lag_release', 'max_lag_samples', 'max_ready_groups', 'max_staleness', 'on_stale', 'on_update'])"),
]
