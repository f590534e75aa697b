"""Bad-input rows of cluster files read whole (format: see the top of ``tests/bad_inputs.py``):
``load_cluster`` refuses a file whose ``stack`` or ``pause_s`` a Cluster cannot hold, and
``load_weight_sync`` names a bad ``pause_s`` by the file's key."""

from __future__ import annotations

QWEN = "[model]\\npreset = \"qwen3-30b-a3b\"\\n[train]\\ndp = 16\\n[infer]\\ninstances = 4\\ntp = 4\\n"
LOST = ("must be absent for load_cluster, which returns a Cluster (no stack, no pause_s): the file's {} would be "
        "lost; read the file with rollsim.sync.load_weight_sync(path) (the WeightSync that Scenario(weight_sync=...) "
        "takes: .cluster, .stack, .pause_s), or remove the key")

ROWS: list[tuple[str, str, str, str]] = [
    ("sync cluster", f"load_cluster(toml('{QWEN}[stack]\\npreset = \"nemo-rl-reshard\"\\n'))", "ScenarioError",
     "stack: " + LOST.format("stack")),
    ("sync cluster", f"load_cluster(toml('stack = \"cuda-ipc\"\\n{QWEN}'))", "ScenarioError",
     "stack: " + LOST.format("stack")),
    ("sync cluster", f"load_cluster(toml('pause_s = 0.1\\n{QWEN}'))", "ScenarioError",
     "pause_s: " + LOST.format("pause_s")),
    ("sync cluster", f"sync.load_weight_sync(toml('pause_s = \"half\"\\n{QWEN}'))", "ScenarioError",
     "pause_s: must be a number of seconds, 'all' or 'pause_resume', got 'half'"),
    ("sync cluster", f"sync.load_weight_sync(toml('{QWEN}[stack]\\npreset = \"nccl\"\\n'))", "ScenarioError",
     "stack.preset: unknown stack 'nccl'; known: checkpoint-engine, nemo-rl-reshard, rdma-write, verl-ring, "
     "sglang-per-tensor, cuda-ipc, filesystem, nccl-broadcast-rank0, nccl-broadcast-all-ranks"),
]
