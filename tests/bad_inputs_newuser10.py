"""Bad inputs a new user met on first use as a slime and an AReaL user: a launch script whose quote is
never closed (a quote may span lines, as slime's ``RUNTIME_ENV_JSON`` does, so the error names the line
it opened on), and ``rollsim whatif --admission-eta`` (AReaL's ``max_head_offpolicyness``) given a value
that is not a bound, or for a pipeline it does not apply to; a weight-sync ``rollsim.sync.Cluster`` given a
model or an accelerator by name (the builder named) or a misspelt topology (the closest named); and
``rollsim import`` without its file (its optional overrides are not said to be required); appended to the table of
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
    ("sync", "rollsim.sync.Cluster(model='qwen3-235b-a22b')", "ScenarioError",
     "model: must be a ModelSpec, got str (rollsim.sync.model(name) builds one: rollsim.sync.MODELS or a model of "
     "rollsim.hardware.specs)"),
    ("sync", "rollsim.sync.Cluster(model=rollsim.sync.model('qwen3-235b-a22b'), hardware='h800')", "ScenarioError",
     "hardware: must be a Hardware, got str (rollsim.sync.Hardware.from_accelerator(name) builds one from an "
     "accelerator)"),
    ("sync", "cli('sync', write('c.toml', 'topology = \"broadcst\"\\n[model]\\npreset = \"qwen3-4b\"\\n'))", "CliExit",
     f"{_ERR}topology: must be one of colocated, naive, parallel, relay, broadcast, got 'broadcst'; did you mean "
     "'broadcast'?"),
    ("config CLI", "cli('import')", "CliExit", "exit 2: rollsim import: error: the following arguments are required: file"),
]
