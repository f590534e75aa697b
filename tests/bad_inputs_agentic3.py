"""Bad inputs of agentic trajectories in the batch pipelines, the agentic TOML tables and the agentic
command-line flags, and the exact error each gets; appended to the table of ``tests/bad_inputs.py``
(see its format)."""

from __future__ import annotations

OVER = ("must be None with agentic (a batch waits for all its trajectories: stopping those in a tool call at the "
        "batch's end is not modelled), got")

ROWS: list[tuple[str, str, str, str]] = [
    # ---------------------------------------------------------------- batch pipelines
    ("agentic", "Scenario(pipeline=Synchronous(0.5), agentic=rollsim.Agentic())", "ScenarioError",
     f"pipeline.over_sampling: {OVER} 0.5"),
    ("agentic", "Scenario(pipeline=Synchronous(math.inf, keep_partial=True), agentic=rollsim.Agentic())",
     "ScenarioError", f"pipeline.over_sampling: {OVER} inf"),
    ("agentic", "rollsim.Agentic(tool_latency_s=LogNormal(1.0, 1.0, 30.0, 0.5))", "ScenarioError",
     "agentic.tool_latency_s.group_correlation: must be 0 (a tool call's draw does not depend on its prompt), got 0.5"),
    # ---------------------------------------------------------------- TOML: the tool latency is seconds
    ("agentic", "Scenario.from_toml_str('[agentic.tool_latency_s]\\nkind = \"lognormal\"\\nmu = 1.0\\nmax_tokens = 30.0')",
     "ScenarioError", "agentic.tool_latency_s.max_tokens: a tool latency is seconds: its cap is max_s (max_tokens is the "
                      "key of token lengths), got max_tokens = 30.0"),
    ("agentic", "Scenario.from_toml_str('[agentic.tool_latency_s]\\nkind = \"lognormal\"\\nmu = 1.0')", "ScenarioError",
     "agentic.tool_latency_s.max_s: a lognormal tool latency needs max_s = ... (cap of one call's latency, seconds)"),
    # ---------------------------------------------------------------- the agentic flags
    ("CLI", "cli('run', '--max-turns', '4')", "CliExit",
     "exit 2: rollsim: error: --max-turns applies to agentic scenarios only: give --agentic-preset "
     "NAME (default, code-interpreter-math, swe-agent) or an [agentic] table in the scenario file"),
    ("CLI", "cli('run', '--agentic-preset', 'default', '--pipeline', 'sync', '--over-sampling', '0.5')", "CliExit",
     f"exit 2: rollsim: error: --over-sampling: {OVER.replace('None', 'none')} 0.5"),  # a flag's None: none
    ("CLI", "cli('compare', '--agentic-preset', 'default', '--max-turns', '0')", "CliExit",
     "exit 2: rollsim: error: --max-turns: must be in [1, 1048576], got 0"),
]
