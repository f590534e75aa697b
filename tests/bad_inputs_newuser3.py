"""Bad inputs a new user hit in the first hour (metrics of one framework calibrated on another's
config) and the exact error each gets; appended to the table of ``tests/bad_inputs.py`` (see its
format)."""

from __future__ import annotations

_EX = "rollsim.configs.EXAMPLES"
_LOAD = f"rollsim.configs.load({_EX} / %r)"
_VERL_CSV = f"{_EX} / 'verl_grpo_metrics.csv'"
_AREAL_CSV = f"{_EX} / 'areal_grpo_metrics.csv'"


def _mismatch(detected: str, hint: str, config: str) -> str:
    return (f"metrics: the table has {detected} metric names ({hint}) but the config is for {config}: the metrics "
            f"are most likely of another run; give the {config} run's metrics, or framework={detected!r} (rollsim "
            f"calibrate / whatif: --metric-names {detected}) to fit them on this config anyway")


_TABLE = ("verl_grpo_metrics.csv is a .csv file, a table, not a config (a run's per-step metrics go to rollsim.calibrate, "
          "on the command line rollsim calibrate --config CONFIG --metrics FILE); give the run's config (verl YAML or "
          "launch script, AReaL YAML, slime or OpenRLHF launch script)")
_VERL_HINT = "timing_s/..., response_length/..."
_AREAL_HINT = "timeperf/..., ppo_actor/..."

ROWS: list[tuple[str, str, str, str]] = [
    ("calibration", f"rollsim.calibrate({_VERL_CSV}, {_LOAD % 'areal_grpo.yaml'}, bootstrap=0)", "ScenarioError",
     _mismatch("verl", _VERL_HINT, "areal")),
    ("calibration", f"rollsim.calibrate({_AREAL_CSV}, {_LOAD % 'verl_grpo.yaml'}, bootstrap=0)", "ScenarioError",
     _mismatch("areal", _AREAL_HINT, "verl")),
    ("calibration", f"rollsim.calibrate({_VERL_CSV}, {_LOAD % 'slime_async.sh'}, bootstrap=0)", "ScenarioError",
     _mismatch("verl", _VERL_HINT, "slime")),
    ("calibration", f"cli('calibrate', '--config', str({_EX} / 'areal_grpo.yaml'), '--metrics', str({_VERL_CSV}))",
     "CliExit", "exit 2: rollsim: error: --" + _mismatch("verl", _VERL_HINT, "areal")),
    ("calibration", f"cli('whatif', '--config', str({_EX} / 'verl_grpo.yaml'), '--metrics', str({_AREAL_CSV}), "
                    "'--pipeline', 'sync')",
     "CliExit", "exit 2: rollsim: error: --" + _mismatch("areal", _AREAL_HINT, "verl")),
    # a metrics table given as the config
    ("config CLI", f"rollsim.configs.load({_VERL_CSV})", "ScenarioError", "config: " + _TABLE),
    ("config CLI", f"cli('import', str({_VERL_CSV}))", "CliExit", "exit 2: rollsim: error: config: " + _TABLE),
    ("config CLI", f"cli('calibrate', '--config', str({_VERL_CSV}), '--metrics', str({_VERL_CSV}))", "CliExit",
     "exit 2: rollsim: error: --config: " + _TABLE),
    # the command line names its own flag, not the Python keyword
    ("config CLI", "cli('calibrate', '--config', write('b.yaml', 'foo: 1\\n'), '--metrics', str(" + _VERL_CSV + "))",
     "CliExit", "exit 2: rollsim: error: --framework: cannot tell which framework b.yaml is for; pass --framework, one "
     "of verl, areal, slime, openrlhf"),
    # plot / report name --out, not the Python function's argument (path=, fmt=), before drawing anything
    ("CLI", "cli('plot', write('r', None), '--kind', 'utilization', '--out', 'f.txt')", "CliExit",
     "exit 2: rollsim: error: --out: must end in one of .png, .svg, .pdf, got 'f.txt'"),
    ("CLI", "cli('report', write('r', None), '--out', 'r.txt')", "CliExit",
     "exit 2: rollsim: error: --out: must end in .html or .md (the report's format follows it), got 'r.txt'"),
    ("CLI", "cli('report', write('r', None), '--out', 'r.md', '--format', 'html')", "CliExit",
     "exit 2: rollsim: error: --out: must end in .html for --format html, got 'r.md'"),
    # a cluster file's key is named with its table, as the file has it
    ("sync cluster", "cli('sync', write('c.toml', '[model]\\npreset = \"qwen3-4b\"\\n[hardware]\\nlatency_s = -1\\n'))",
     "CliExit", "exit 2: rollsim: error: hardware.latency_s: must be in [0, 1e6] seconds, got -1"),
    ("sync cluster", "cluster_from_dict({'model': {'preset': 'qwen3-4b'}, 'software': {'pause_resume_s': -0.5}})",
     "ScenarioError", "software.pause_resume_s: must be in [0, 1e6] seconds, got -0.5"),
    # rollsim hardware names its flags inside the message too (as split does), not Deployment's arguments
    ("hardware CLI", "cli('hardware', '--model', 'Qwen3-235B-A22B', '--gpu', 'A100-40G')", "CliExit",
     "exit 2: rollsim: error: --gpu-memory-utilization: leaves no room for KV cache: Qwen3-235B-A22B needs 437.9 GiB "
     "of weights per GPU at --rollout-tp 1, A100-40G x 0.9 gives 36.0 GiB (with 2.45 GiB for activations); raise "
     "--rollout-tp or --gpu-memory-utilization"),
    ("hardware CLI", "cli('hardware', '--model', 'Qwen3-8B', '--gpu', 'H100', '--colocated', '--rollout-gpus', '8', "
                     "'--train-gpus', '4')", "CliExit",
     "exit 2: rollsim: error: --colocated: needs --rollout-gpus == --train-gpus (the same GPUs), got 8 and 4"),
    ("what if", f"cli('whatif', '--config', str({_EX} / 'verl_grpo.yaml'), '--metrics', str({_VERL_CSV}), "
                "'--plot', 'x.txt')", "CliExit",
     "exit 2: rollsim: error: --plot: must end in one of .png, .svg, .pdf, got 'x.txt'"),
]
