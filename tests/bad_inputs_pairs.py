"""Bad training hardware for a calibrated run's GPU changes (``rollsim.calibrate(model=, gpu=,
backend=, train_options=)``, ``rollsim.what_if.train_scale`` and ``--gpu`` on the command line) and the
exact error each gets; appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

LOAD = "rollsim.configs.load"
METRICS = ("write('m.csv', 'gen_s,train_s,response_mean,response_max\\n10,5,100,400\\n12,6,120,500\\n"
           "11,5.5,110,450\\n')")
VERL = "write('v.yaml', 'data: {train_batch_size: 4, max_response_length: 1024}\\n')"
CAL = f"rollsim.calibrate({METRICS}, {LOAD}({VERL}), bootstrap=0"

ROWS: list[tuple[str, str, str, str]] = [
    ("training hardware", f"{CAL}, gpu='TPU9')", "ScenarioError",
     "re:gpu: unknown accelerator 'TPU9' \\(known, case-insensitive: H100, .*\\)"),
    ("training hardware", f"{CAL}, model='NoSuchModel-1B')", "ScenarioError",
     "re:model: unknown model 'NoSuchModel-1B' \\(known, .*: Qwen2.5-0.5B, .*; another model: its Hugging Face "
     "config.json, read by rollsim.hardware.model_from_hf_config .*\\)"),
    ("training hardware", f"{CAL}, backend='deepspeed')", "ScenarioError",
     "backend: must be one of fsdp2, megatron, got 'deepspeed'"),
    ("training hardware", f"{CAL}, train_options=[('mini_batches', 4)])", "ScenarioError",
     "train_options: must be a dict of rollsim.hardware.training.train_step_s arguments, got list"),
    ("training hardware", f"{CAL}, train_options={{'tokens': 5}})", "ScenarioError",
     "train_options: 'tokens' is set by rollsim.whatif (from the calibrated run), not here"),
    ("training hardware", f"{CAL}, train_options={{'minibatches': 4}})", "ScenarioError",
     "re:train_options: unknown argument 'minibatches' \\(allowed: ppo_epochs, reference, .*\\); did you mean "
     "mini_batches\\?"),
    ("training hardware", f"rollsim.what_if.train_scale({CAL}), 0)", "ScenarioError",
     "train_gpus: must be in [1, 1048576], got 0"),
    ("training hardware", f"rollsim.what_if.train_scale(rollsim.calibrate({METRICS}, {LOAD}({VERL}).scenario, "
     "bootstrap=0), 8)", "ScenarioError",
     "base_gpus: needs a base imported from a config (its GPU layout) or base_gpus"),
    ("training hardware", f"cli('whatif', '--config', {VERL}, '--metrics', {METRICS}, '--gpu', 'B9000')", "CliExit",
     "re:exit 2: rollsim: error: --gpu: unknown accelerator 'B9000' \\(known, case-insensitive: H100, .*\\)"),
]
