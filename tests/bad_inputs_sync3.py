"""Bad-input rows of the weight sync inside the scenario (format: see the top of
``tests/bad_inputs.py``): ``Scenario(weight_sync=...)`` and its ``[weight_sync]`` TOML table,
``rollsim.sync.WeightSync``, the cadence knob of ``rollsim.presets.verl_fully_async`` and cluster
files read with the scenario files' checks."""

from __future__ import annotations

CL = "sync.chapter_cluster('parallel', instances=1)"
DERIVED = ("is derived from weight_sync (2.50630016 s per update: weight_sync_s = 0.0, rollout_pause_s = "
           "2.50630016); give the sync as numbers (weight_sync_s, rollout_pause_s) or as weight_sync, not both")

ROWS: list[tuple[str, str, str, str]] = [
    ("scenario weight sync", f"Scenario(weight_sync={CL}, weight_sync_s=3.0)", "ScenarioError",
     f"weight_sync_s: {DERIVED}; got weight_sync_s=3.0"),
    ("scenario weight sync", f"Scenario(weight_sync={CL}, rollout_pause_s=1.0)", "ScenarioError",
     f"rollout_pause_s: {DERIVED}; got rollout_pause_s=1.0"),
    ("scenario weight sync", f"Scenario(weight_sync={CL}).replace(weight_sync_s=3.0)", "ScenarioError",
     f"weight_sync_s: {DERIVED}; got weight_sync_s=3.0"),
    ("scenario weight sync", "Scenario(weight_sync=2.5)", "ScenarioError",
     "weight_sync: must be None, a rollsim.sync.Cluster, an estimate of one (rollsim.sync.estimate, estimate_stack), "
     "a rollsim.sync.WeightSync or a table of a cluster file, got float 2.5"),
    ("scenario weight sync", f"sync.WeightSync({CL}, pause_s=3.0)", "ScenarioError",
     "weight_sync.pause_s: must be in [0, the sync (2.50630016 s)] seconds, got 3.0"),
    ("scenario weight sync", f"sync.WeightSync({CL}, pause_s='some')", "ScenarioError",
     "weight_sync.pause_s: must be a number of seconds, 'all' or 'pause_resume', got 'some'"),
    ("scenario weight sync", f"sync.WeightSync({CL}, stack='nccl')", "ScenarioError",
     "weight_sync.stack: must be one of checkpoint-engine, nemo-rl-reshard, rdma-write, verl-ring, sglang-per-tensor, "
     "cuda-ipc, filesystem, nccl-broadcast-rank0, nccl-broadcast-all-ranks, got 'nccl'"),
    ("scenario weight sync", "sync.WeightSync('qwen3-4b')", "ScenarioError",
     "weight_sync.cluster: must be a rollsim.sync.Cluster, got str"),
    ("scenario weight sync", "Scenario.from_toml_str('[weight_sync]\\ntopology = \"parallel\"')", "ScenarioError",
     "weight_sync.model: a [model] table is required (preset = ..., or params = ...)"),
    ("scenario weight sync",
     "Scenario.from_toml_str('[weight_sync]\\nmodel = { preset = \"qwen3-4b\" }\\ninfer = { tp = 0 }')",
     "ScenarioError", "weight_sync.infer.tp: must be in [1, 65536], got 0"),
    ("scenario weight sync",
     "Scenario.from_toml_str('[weight_sync]\\nmodel = { preset = \"qwen3-4b\" }\\nspeed = 3')",
     "ScenarioError", "weight_sync.speed: unknown key (allowed: fanout, hardware, infer, model, software, stack, "
                      "topology, train)"),
    ("sync cluster", "load_cluster(toml('[model]\\npreset = \"qwen3-4b\"\\n[infer]\\ntp = ' + '9' * 30))",
     "ScenarioError", "infer.tp: must be an integer of at most 20 digits, got one of 30 digits"),
    ("sync cluster", "load_cluster(os.path.dirname(toml('')))", "ScenarioError",
     "re:cluster file: '.*' is a directory, not a TOML file"),
    ("sync cluster", "cluster_from_dict({'model': {'groups': [{'name': 'w', 'count': 2}]}})", "ScenarioError",
     "model.groups[0].elems: is required"),
    ("sync cluster", "cluster_from_dict({'model': {'groups': [], 'name': 'x'}})", "ScenarioError",
     "model.groups: must be a non-empty list of tables, got []"),
    ("sync cluster", "cluster_from_dict({'model': {'groups': [{'name': 'w', 'count': 2, 'elems': 8}], 'params': 3}})",
     "ScenarioError", "model.params: unknown key with groups = [...] (allowed: groups, infer_precision, layers, "
                      "moe_layers, n_experts, name, source, top_k, train_precision)"),
]
ROWS += [
    ("presets", "rollsim.presets.verl_fully_async(trigger_parameter_sync_step=0)", "ScenarioError",
     "trigger_parameter_sync_step: must be in [1, 16777216], got 0"),
    ("presets", "rollsim.presets.verl_fully_async(trigger_parameter_sync_step=2.0)", "ScenarioError",
     "trigger_parameter_sync_step: must be an integer in [1, 16777216], got float 2.0"),
]
ROWS += [
    ("theory", "rollsim.theory.sync_cadence_staleness(0)", "ScenarioError", "sync_every: must be in [1, 16777216], got 0"),
    ("theory", "rollsim.theory.applied_compute_mean_staleness(256, 512, 0.3, sync_every=1.5)", "ScenarioError",
     "sync_every: must be an integer in [1, 16777216], got float 1.5"),
]
ROWS += [
    ("sweep TOML", "sweep_config.parse({'base': {'weight_sync': {'model': {'preset': 'qwen3-4b'}, 'infer': {'tp': 0}}}})",
     "ScenarioError", "base.weight_sync.infer.tp: must be in [1, 65536], got 0"),
    ("CLI", "cli('sync', '--validation', '/x/c.toml')", "CliExit",
     "exit 2: rollsim: error: cluster: --validation prints the published rows' table and takes no cluster file, "
     "got '/x/c.toml' (run rollsim sync FILE for the cluster)"),
]
