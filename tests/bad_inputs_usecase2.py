"""Bad inputs of a deployment's weight sync given as a cluster (``Deployment.scenario(weight_sync=...)``,
``rollsim run --model`` with a scenario file's ``[weight_sync]``): a cluster of another deployment was
priced as given; appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

_D = "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=2, train_gpus=2)"
_S = "lengths=LogNormal(6.0, 1.0, 4096.0), prompts_per_step=8, group_size=8"
_GIVE = ("give the cluster of this deployment (rollsim.sync.Cluster, a cluster file's [train], [infer], [model]), "
         "or the sync as weight_sync_s and rollout_pause_s")
_CH = "sync.chapter_cluster('parallel', instances=1)"
_Q8 = ("sync.Cluster(model=sync.presets.from_spec('Qwen3-8B'), train=sync.TrainLayout(dp=2), "
       "infer=sync.InferLayout(instances=2, tp=1){hw})")

ROWS: list[tuple[str, str, str, str]] = [
    ("hardware weight sync", f"{_D}.scenario({_S}, weight_sync={_CH})", "ScenarioError",
     "weight_sync: the cluster prices another deployment's sync: model chapter 1T (FP8) (the deployment's is Qwen3-8B); 1 "
     "inference instance x TP 8 = 8 GPUs (the deployment's rollout: 2 GPUs); 8 training GPUs (the deployment's: 2); "
     + _GIVE),
    ("hardware weight sync",
     f"{_D}.scenario({_S}, weight_sync={_Q8.format(hw=', hardware=sync.Hardware(colocated=True)')})", "ScenarioError",
     "weight_sync: the cluster prices another deployment's sync: hardware.colocated = true (the deployment's colocated "
     f"= False); {_GIVE}"),
    ("hardware weight sync",
     "cli('run', write('s.toml', '[weight_sync]\\nmodel = { preset = \"Qwen3-8B\" }\\ninfer = { instances = 4, tp = 1 }\\n'"
     "'train = { dp = 2 }\\n'), '--model', 'Qwen3-8B', '--gpu', 'H100', '--rollout-gpus', '2', '--train-gpus', '2', "
     "'--horizon-s', '60')", "CliExit",
     "re:exit 2: rollsim: error: weight_sync: the cluster prices another deployment's sync: 4 inference instances x "
     r"TP 1 = 4 GPUs \(the deployment's rollout: 2 GPUs\); give the cluster of this deployment \(rollsim\.sync\.Cluster, "
     r"a cluster file's \[train\], \[infer\], \[model\]\), or the sync as weight_sync_s and rollout_pause_s \(the value "
     r"in '.*s\.toml'\)"),
]
