"""Bad inputs a new user met on first use as a slime and an AReaL user: a launch script whose quote is
never closed (a quote may span lines, as slime's ``RUNTIME_ENV_JSON`` does, so the error names the line
it opened on), and ``rollsim whatif --admission-eta`` (AReaL's ``max_head_offpolicyness``) given a value
that is not a bound, or for a pipeline it does not apply to; appended to the table of
``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

_ERR = "exit 2: rollsim: error: "
_EX = "os.path.join(ROOT, 'python/rollsim/examples/configs/%s')"
_AREAL = ("'--config', " + _EX % "areal_grpo.yaml" + ", '--metrics', " + _EX % "areal_grpo_metrics.csv")
_VERL = ("'--config', " + _EX % "verl_grpo.yaml" + ", '--metrics', " + _EX % "verl_grpo_metrics.csv")

ROWS: list[tuple[str, str, str, str]] = [
    ("configs", "rollsim.configs.load(write('u.sh', 'python3 train.py --rollout-batch-size 8 --x \"abc\\n--y 2\\n'))",
     "ScenarioError", "config: cannot split the command line 'python3 train.py --rollout-batch-size 8 --x \"abc': No "
     "closing quotation (a quote opened on this line is not closed by the end of the file)"),
    ("config CLI", f"cli('whatif', {_AREAL}, '--admission-eta', '2,x')", "CliExit",
     "exit 2: rollsim whatif: error: argument --admission-eta: must be integers >= 0 or 'none' separated by commas, "
     "got '2,x'"),
    ("config CLI", f"cli('whatif', {_VERL}, '--bootstrap', '5', '--admission-eta', '2')", "CliExit",
     f"{_ERR}--admission-eta: needs --pipeline fully-async (the bound applies to that pipeline; the config's is "
     "Synchronous)"),
    ("config CLI", f"cli('whatif', {_VERL}, '--bootstrap', '5', '--admission-eta', '2', '--pipeline', 'sync')",
     "CliExit", f"{_ERR}--admission-eta: applies to the fully asynchronous pipelines only (--pipeline fully-async or "
     "verl-fully-async), got --pipeline sync"),
]
