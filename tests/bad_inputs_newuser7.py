"""Bad inputs a new user met on first use: a horizon past the engine's sample limit (named by the
flag given, with how far to shorten it), a training option's short or misspelled name (``tp``,
``ep_size``, ``tensor_paralel``: the option meant), a pipeline spelled otherwise than the command
line's names (``async``: refused by every command alike); appended to the table of
``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

from bad_inputs_hwtrain import _OPTS  # the training options' names, as their messages list them

_ERR = "exit 2: rollsim: error: "
_CAL = ("write('m.csv', 'gen_s,train_s,response_mean,response_max\\n10,5,100,400\\n12,6,120,500\\n11,5.5,110,450\\n')")
_WHATIF = ("cli('whatif', '--config', write('v.yaml', 'data: {train_batch_size: 4, max_response_length: 1024}\\n'), "
           f"'--metrics', {_CAL}, '--bootstrap', '0', '--draws', '0', '--steps', '4', '--pipeline', %r)")
_PIPES = "must be 'sync', 'one-step', 'k-step:K', 'fully-async' or 'verl-fully-async' (verl's trainer cadence), or an "
_HW = "cli('hardware', '--model', 'Qwen3-8B', '--gpu', 'H100', '--train-option', %r)"

ROWS: list[tuple[str, str, str, str]] = [
    # the engine's 2**32 - 1 samples cannot be raised: the message leads with the horizon given, and says how far
    ("runaway", "cli('run', '--horizon-s', '1e12')", "CliExit",
     _ERR + "--horizon-s: this scenario would start about 2.45e+12 samples (about 2.45e+12 events, about 1.9 days at "
     "~15 M events/s; a run without --out keeps memory constant) over --horizon-s = 1e+12 s, more than one run can "
     "start (2**32 - 1 samples: sample ids are 32-bit); shorten --horizon-s to at most about 1.8e+09 s"),
    ("hardware", _HW % "EP_size=8", "CliExit",
     _ERR + f"--train-option: unknown option 'EP_size' (allowed: {_OPTS}); did you mean expert_parallel?"),
    ("hardware", _HW % "tensor_paralel=2", "CliExit",
     _ERR + f"--train-option: unknown option 'tensor_paralel' (allowed: {_OPTS}); did you mean tensor_parallel?"),
    ("hardware", _HW % "colour=2", "CliExit", _ERR + f"--train-option: unknown option 'colour' (allowed: {_OPTS})"),
    ("hardware", "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=1, "
     "train_options={'vpp': 2})", "ScenarioError",
     f"train_options: unknown argument 'vpp' of rollsim.hardware.training.train_step_s (allowed: {_OPTS}); did you "
     "mean virtual_pipeline?"),
    # async is no pipeline name of any command (run and split refused it, whatif took it): fully-async is meant
    ("pipeline", _WHATIF % "async", "CliExit",
     _ERR + f"--pipeline: {_PIPES}imported verl fully_async config, got 'async'; did you mean 'fully-async'?"),
    ("pipeline", _WHATIF % "sync,asynchronous", "CliExit",
     _ERR + f"--pipeline: {_PIPES}imported verl fully_async config, got 'asynchronous'; did you mean 'fully-async'?"),
    ("pipeline", "rollsim.pipelines.pipeline_from_name('async')", "ScenarioError",
     "pipeline: must be 'sync', 'one-step', 'k-step:K' or 'fully-async', got 'async'; did you mean 'fully-async'?"),
    ("pipeline", "rollsim.pipelines.pipeline_from_name('fully-asynchronous')", "ScenarioError",
     "pipeline: must be 'sync', 'one-step', 'k-step:K' or 'fully-async', got 'fully-asynchronous'; did you mean "
     "'fully-async'?"),
    ("pipeline", "rollsim.pipelines.pipeline_from_name('k-step')", "ScenarioError",
     "pipeline: must be 'sync', 'one-step', 'k-step:K' or 'fully-async', got 'k-step'; did you mean 'k-step:K', with K "
     "the batches generation may run ahead (k-step:2)?"),
]
