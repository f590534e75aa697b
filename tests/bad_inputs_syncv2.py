"""Bad-input rows of the weight-sync stacks (format: see the top of ``tests/bad_inputs.py``):
``rollsim.sync.Stack`` fields, ``rollsim.sync.stack`` names, ``rollsim.sync.calibrate`` and the
context-parallel size of ``rollsim.sync.TrainLayout``."""

from __future__ import annotations

TRANSPORTS = "nccl-broadcast, nccl-p2p, nccl-ring-relay, rdma-write, cuda-ipc, filesystem"
STACKS = ("checkpoint-engine, nemo-rl-reshard, rdma-write, verl-ring, sglang-per-tensor, cuda-ipc, filesystem, "
          "nccl-broadcast-rank0, nccl-broadcast-all-ranks")
CL = ("sync.Cluster(model=sync.MODELS['qwen3-4b'], train=sync.TrainLayout(tp=8), infer=sync.InferLayout(tp=8), "
      "topology='broadcast')")

ROWS: list[tuple[str, str, str, str]] = [
    ("sync stacks", "sync.Stack('x', 'carrier-pigeon')", "ScenarioError",
     f"transport: must be one of {TRANSPORTS}, got 'carrier-pigeon'"),
    ("sync stacks", "sync.Stack('x', 'nccl-broadcast', senders='rank0')", "ScenarioError",
     "senders: must be one of one, stage_heads, all, got 'rank0'"),
    ("sync stacks", "sync.Stack('x', 'nccl-p2p', quantize_on='both')", "ScenarioError",
     "quantize_on: must be 'sender' or 'receiver', got 'both'"),
    ("sync stacks", "sync.Stack('x', 'nccl-p2p', efficiency=1.5)", "ScenarioError", "efficiency: must be in [1e-6, 1], got 1.5"),
    ("sync stacks", "sync.Stack('x', 'nccl-p2p', per_instance_bucket_s=-1.0)", "ScenarioError",
     "per_instance_bucket_s: must be in [0, 1e6] seconds, got -1.0"),
    ("sync stacks", "sync.Stack('x', 'rdma-write', registration_bytes_per_s=math.nan)", "ScenarioError",
     "registration_bytes_per_s: must be in [0, 1e15] bytes/s, got nan"),
    ("sync stacks", "sync.Stack('x', 'nccl-p2p', staging_copies=9)", "ScenarioError", "staging_copies: must be in [0, 8], got 9"),
    ("sync stacks", "sync.Stack('x', 'nccl-p2p', calibrated_on=('a', 'b', 'c'))", "ScenarioError",
     "calibrated_on: must name at most 2 published rows, got 3"),
    ("sync stacks", "sync.stack('nccl')", "ScenarioError", f"stack: must be one of {STACKS}, got 'nccl'"),
    ("sync stacks", f"sync.calibrate({CL}, 0.0)", "ScenarioError", "measured_s: must be in (0, 1e6] seconds, got 0.0"),
    ("sync stacks", f"sync.calibrate({CL}, 5.0, fit_params=('efficiency', 'per_update_s'))", "ScenarioError",
     "fit_params: one measurement fits exactly 1 parameter, got 2"),
    ("sync stacks", f"sync.calibrate({CL}, 5.0, fit_params=('bucket_bytes',))", "ScenarioError",
     "fit: must name parameters among efficiency, per_update_s, per_tensor_s, per_bucket_s, per_instance_bucket_s, "
     "got 'bucket_bytes'"),
    ("sync stacks", f"sync.calibrate({CL}, -2.0)", "ScenarioError", "measured_s: must be in (0, 1e6] seconds, got -2.0"),
    ("sync stacks", f"sync.calibrate({CL}, '5')", "ScenarioError", "measured_s: must be a number of seconds, got str '5'"),
    ("sync stacks", "sync.TrainLayout(cp=0)", "ScenarioError", "train.cp: must be in [1, 65536], got 0"),
]
ROWS += [
    ("sync stacks", "sync.config.stack_from_dict({'stack': 'nccl'})", "ScenarioError", f"stack: unknown stack 'nccl'; known: {STACKS}"),
    ("sync stacks", "sync.config.stack_from_dict({'stack': {'efficiency': 0.5}})", "ScenarioError",
     "stack.transport: give preset = NAME or transport = ..."),
    ("sync stacks", "sync.config.stack_from_dict({'stack': {'preset': 'rdma-write', 'senders': 3}})", "ScenarioError",
     "stack.senders: must be one of one, stage_heads, all, got 3"),
    ("sync stacks", "sync.config.stack_from_dict({'stack': {'preset': 'rdma-write', 'colour': 'red'}})", "ScenarioError",
     "re:stack\\.colour: unknown key \\(allowed: preset, name, transport, efficiency, .*"),
    ("sync stacks", "sync.config.stack_from_dict({'stack': {'preset': 'rdma-write', 'efficiency': 'fast'}})", "ScenarioError",
     "stack.efficiency: must be a number, got 'fast'"),
    ("sync stacks", "sync.presets.hardware('TPU-v5')", "ScenarioError",
     "re:hardware: must be one of h100, h200, h800, h20, chapter, gb200 or an accelerator \\(H100, .*\\), got 'TPU-v5'"),
]
