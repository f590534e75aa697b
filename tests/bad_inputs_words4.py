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
]
