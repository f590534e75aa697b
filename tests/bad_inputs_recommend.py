"""Bad-input rows of the GPU-split recommendation, the run guards, the presets and the
weight-sync ranking (appended to ``tests/bad_inputs.py``'s table; same format)."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    # ---------------------------------------------------------------- pipelines and presets
    ("pipeline", "FullyAsync(lag_release='sync')", "ScenarioError",
     "pipeline.lag_release: 'sync' releases places under max_lag_samples: it needs max_lag_samples (an integer >= "
     "batch_size)"),
    ("pipeline", "FullyAsync(max_lag_samples=512, lag_release='soon')", "ScenarioError",
     "pipeline.lag_release: must be 'take' or 'sync', got 'soon'"),
    ("presets", "presets.verl_fully_async(0, gated_on_sync=1)", "ScenarioError",
     "gated_on_sync: must be True or False, got 1"),
]

_SPLIT = "rollsim.resources.gpu_split(Scenario(), 16, gpus_per_instance=1, slots_per_instance=64, gpu_s_per_token=0.004, "
_RANGE = ("rollout_gpus: entries must be integer multiples of gpus_per_instance (1) in [1, 15] (one rollout instance at "
          "least, one training GPU at least), each once; invalid: ")
_SIZED = ("the split sizes the pool and the trainer from the GPUs (use --slots-per-instance, --train-fixed-s and "
          "--gpu-s-per-token, with any log-prob recompute in it)")

ROWS += [
    # ---------------------------------------------------------------- GPU split
    ("gpu_split", _SPLIT + "rollout_gpus=[0, 2.7, 100])", "ScenarioError",
     _RANGE + "entry 0 (0), entry 1 (2.7), entry 2 (100)"),
    ("gpu_split", _SPLIT + "rollout_gpus=[2, 4, 2])", "ScenarioError", _RANGE + "entry 2 (2, repeats entry 0)"),
    ("gpu_split", _SPLIT + "rollout_gpus=[True, np.int64(3), 4.0])", "ScenarioError",
     _RANGE + "entry 0 (True), entry 2 (4.0)"),
    ("gpu_split", _SPLIT + "rollout_gpus=[])", "ScenarioError",
     "rollout_gpus: must name at least one split, got an empty sequence (None: every split)"),
    ("gpu_split", _SPLIT + "rollout_gpus='4')", "ScenarioError", "rollout_gpus: must be a sequence of integers, got '4'"),
    ("gpu_split", "rollsim.resources.gpu_split(Scenario(), 16, gpus_per_instance=2, slots_per_instance=64, gpu_s_per_token=0.004, "
     "rollout_gpus=[4, 3])", "ScenarioError",
     "rollout_gpus: entries must be integer multiples of gpus_per_instance (2) in [2, 15] (one rollout instance at "
     "least, one training GPU at least), each once; invalid: entry 1 (3)"),
    ("gpu_split", "rollsim.resources.gpu_split(Scenario(), 2, gpus_per_instance=2, slots_per_instance=64, gpu_s_per_token=0.004)",
     "ScenarioError", "total_gpus: 2 GPUs cannot hold one rollout instance (2 GPUs) and one training GPU"),
    ("gpu_split", _SPLIT + "max_drop_fraction=1.5)", "ScenarioError",
     "max_drop_fraction: must be a number in [0, 1] (or None: no limit), got 1.5"),
    ("gpu_split", _SPLIT + "max_drop_fraction='5%')", "ScenarioError",
     "max_drop_fraction: must be a number in [0, 1] (or None: no limit), got '5%'"),
    ("gpu_split", _SPLIT + "max_staleness_mean=-1)", "ScenarioError",
     "max_staleness_mean: must be a finite number >= 0 (or None: no limit), got -1"),
    ("gpu_split", _SPLIT + "max_staleness_mean=math.nan)", "ScenarioError",
     "max_staleness_mean: must be a finite number >= 0 (or None: no limit), got nan"),
    ("gpu_split", _SPLIT + "exclude_runaway='no')", "ScenarioError", "exclude_runaway: must be True or False, got 'no'"),
    ("gpu_split", _SPLIT + "progress=3)", "ScenarioError",
     "progress: must be None or a callable progress(done, total), got 3"),
    ("gpu_split", "rollsim.resources.gpu_split('sc', 16, gpus_per_instance=1, slots_per_instance=64, gpu_s_per_token=0.004)",
     "ScenarioError", "scenario: must be a rollsim.Scenario, got str"),
    ("CLI", "cli('split', '--gpus', '4', '--gpu-s-per-token', '0.004', '--train-step-s', '60')", "CliExit",
     "exit 2: rollsim: error: split: --train-step-s cannot be set: " + _SIZED),
    ("CLI", "cli('split', '--gpus', '4', '--gpu-s-per-token', '0.004', '--rollout-slots', '256')", "CliExit",
     "exit 2: rollsim: error: split: --rollout-slots cannot be set: " + _SIZED),
    ("CLI", "cli('split', '--gpus', '4', '--gpu-s-per-token', '0.004', '--max-drop-fraction', '2')", "CliExit",
     "exit 2: rollsim: error: --max-drop-fraction: must be a number in [0, 1], got 2.0"),
    # ---------------------------------------------------------------- run-time guards
    ("runaway", "simulate(Scenario(horizon_s=1e9), record='summary')", "RunLimitError",
     "max_events: this scenario would process about 2.45e+09 events (about 2.45e+09 samples) over horizon_s = 1e+09 s, "
     "about 2.7 min at ~15 M events/s, more than max_events = 1000000000 (a run-time guard; record='summary' keeps "
     "memory constant); shorten horizon_s, or raise max_events (None: no limit) if you mean it"),
    ("runaway", "simulate(Scenario(horizon_s=1e10), record='summary', max_events=None)", "RunLimitError",
     "horizon_s: this scenario would start about 2.45e+10 samples (about 2.45e+10 events, about 27 min at ~15 M "
     "events/s; record='summary' keeps memory constant) over horizon_s = 1e+10 s, more than one run can start "
     "(2**32 - 1 samples: sample ids are 32-bit); shorten horizon_s to at most about 1.8e+09 s"),
    ("simulate", "simulate(Scenario(), max_events=0)", "ScenarioError",
     "max_events: must be an integer >= 1 or None (no limit), got 0"),
    ("simulate", "simulate(Scenario(), max_events=1e9)", "ScenarioError",
     "max_events: must be an integer >= 1 or None (no limit), got 1000000000.0"),
]

ROWS += [
    # ---------------------------------------------------------------- weight-sync ranking
    ("sync", "sync.rank_topologies(sync.chapter_cluster(), ['relay', 'ring'])", "ValueError",
     "topology: must be one of colocated, naive, parallel, relay, broadcast, got 'ring'"),
]
