"""Bad-input rows of the bounds area (format: see the top of ``tests/bad_inputs.py``): degenerate
numbers outside the documented ranges (chosen so that every summary of an accepted scenario and
every weight-sync estimate stays finite), huge integers, and the units each message names."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    # ---------------------------------------------------------------- scenario ranges
    ("bounds", "Scenario(decode_tokens_per_s=1e-320)", "ScenarioError",
     "decode_tokens_per_s: must be in [1e-6, 1e9] tokens/s, got 1e-320"),
    ("bounds", "Scenario(decode_tokens_per_s=2e9)", "ScenarioError",
     "decode_tokens_per_s: must be in [1e-6, 1e9] tokens/s, got 2000000000.0"),
    ("bounds", "Scenario(prompt_tokens=1e308)", "ScenarioError", "prompt_tokens: must be in [0, 1e9] tokens, got 1e+308"),
    ("bounds", "Scenario(prompt_tokens='500')", "ScenarioError", "prompt_tokens: must be a number of tokens, got str '500'"),
    ("bounds", "Scenario(prefill_tokens_per_s=1e-300)", "ScenarioError",
     "prefill_tokens_per_s: must be in [1e-6, 1e12] tokens/s, or math.inf (free prefill), got 1e-300"),
    ("bounds", "Scenario(horizon_s=1e13)", "ScenarioError", "horizon_s: must be in [1e-6, 1e12] seconds, got 10000000000000.0"),
    ("bounds", "Scenario(horizon_s=1e-9)", "ScenarioError", "horizon_s: must be in [1e-6, 1e12] seconds, got 1e-09"),
    ("bounds", "Scenario(train_step_s=1e308)", "ScenarioError", "train_step_s: must be in [0, 1e12] seconds, got 1e+308"),
    ("bounds", "Scenario(train_step_s=6e11, weight_sync_s=6e11)", "ScenarioError",
     "weight_sync_s: train_step_s + weight_sync_s (the fixed time of a step) must be at most 1e12 seconds, got "
     "600000000000.0 + 600000000000.0 = 1200000000000.0"),
    ("bounds", "Scenario(train_s_per_token=1e4)", "ScenarioError",
     "train_s_per_token: must be in [0, 1e3] seconds/token, got 10000.0"),
    ("bounds", "Scenario(train_s_per_token='2e-5')", "ScenarioError",
     "train_s_per_token: must be a number of seconds/token, got str '2e-5'"),
    ("bounds", "Scenario(train_s_per_token=600.0, logprob_s_per_token=600.0)", "ScenarioError",
     "logprob_s_per_token: train_s_per_token + logprob_s_per_token (a step's time per token) must be at most 1e3 "
     "seconds/token, got 600.0 + 600.0 = 1200.0"),
    ("bounds", "Scenario(rollout_pause_s=1e300)", "ScenarioError", "rollout_pause_s: must be in [0, 1e12] seconds, got 1e+300"),
    ("bounds", "Scenario(slots_per_instance=8, decode_slowdown_per_seq=1e300)", "ScenarioError",
     "decode_slowdown_per_seq: must be in [0, 1e6], got 1e+300"),
    ("bounds", "Scenario(slots_per_instance=8, kv_cache_tokens=1e300)", "ScenarioError",
     "kv_cache_tokens: must be in [1, 1e15] tokens, or None (unlimited), got 1e+300"),
    ("bounds", "Scenario(slots_per_instance=2, decode_throughput_table=((1, 30.0), (2, 1e-300)))", "ScenarioError",
     "decode_throughput_table: throughputs must be in [1e-6, 1e15] tokens/s; item 1 has 1e-300"),
    ("bounds", "OffPolicy(1, over_sampling=1e300)", "ScenarioError",
     "pipeline.over_sampling: must be in [0, 1e6], or math.inf (keep every slot busy), got 1e+300"),
    # ---------------------------------------------------------------- the engine checks the same (raw dict)
    ("bounds", "rollsim._rollsim.simulate(dict(Scenario(horizon_s=60.0).to_dict(), decode_tokens_per_s=1e-320))", "ScenarioError",
     "decode_tokens_per_s: must be in [1e-6, 1e9] tokens/s, got 1e-320"),
    ("bounds", "rollsim._rollsim.simulate(dict(Scenario(horizon_s=60.0).to_dict(), prompt_tokens=1e308))", "ScenarioError",
     "prompt_tokens: must be in [0, 1e9] tokens, got 1e+308"),
    # ---------------------------------------------------------------- huge integers: out of range, never inf
    ("huge integers", "Scenario(decode_tokens_per_s=2**2000)", "ScenarioError",
     "decode_tokens_per_s: must be in [1e-6, 1e9] tokens/s, got 2**2000"),
    ("huge integers", "Scenario(horizon_s=10**400)", "ScenarioError", "horizon_s: must be in [1e-6, 1e12] seconds, got 10**400"),
    ("huge integers", "Scenario(rollout_slots=10**5000)", "ScenarioError",
     "rollout_slots: must be in [1, 16777216], got 10**5000"),
    ("huge integers", "Scenario(seed=2**2000)", "ScenarioError", "seed: must be an integer in [0, 2**64 - 1], got 2**2000"),
    ("huge integers", "Scenario(slots_per_instance=2, decode_throughput_table=((1, 30.0), (2, 10**400)))", "ScenarioError",
     "decode_throughput_table: throughputs must be in [1e-6, 1e15] tokens/s; item 1 has 10**400"),
    ("huge integers", "OffPolicy(k=-(10**400))", "ScenarioError", "pipeline.k: must be in [0, 1000000], got -10**400"),
    ("huge integers", "FullyAsync(admission_eta=3 * 10**30)", "ScenarioError",
     "pipeline.admission_eta: must be in [0, 4294967295], got about 3e+30"),
    ("huge integers", "LengthBalanced(edges=(1000, 10**400))", "ScenarioError",
     "pipeline.batch_order.edges: must be finite, > 0 and strictly increasing numbers of tokens; item 1 is 10**400"),
    ("huge integers", "LengthBalanced(share=2**2000)", "ScenarioError", "pipeline.batch_order.share: must be in (0, 1], got 2**2000"),
    # ---------------------------------------------------------------- weight-sync cluster
    ("sync bounds", "sync.Hardware(nic_bytes_per_s=1e-300)", "ScenarioError",
     "nic_bytes_per_s: must be in [1e3, 1e15] bytes/s, got 1e-300"),
    ("sync bounds", "sync.Hardware(latency_s=2**2000)", "ScenarioError", "latency_s: must be in [0, 1e6] seconds, got 2**2000"),
    ("sync bounds", "sync.SoftwareStack(efficiency=1e-300)", "ScenarioError", "efficiency: must be in [1e-6, 1], got 1e-300"),
    ("sync bounds", "sync.SoftwareStack(bucket_bytes=1.0)", "ScenarioError", "bucket_bytes: must be in [1e3, 1e15] bytes, got 1.0"),
    ("sync bounds", "sync.SoftwareStack(quant_bytes_per_s=math.inf)", "ScenarioError",
     "quant_bytes_per_s: must be in [1e3, 1e15] bytes/s, got inf"),
    ("sync bounds", "sync.chapter_cluster('relay', 2).replace(fanout=-3)", "ScenarioError", "fanout: must be in [1, 1024], got -3"),
    ("sync bounds", "sync.TrainLayout(dp=10**400)", "ScenarioError", "train.dp: must be in [1, 65536], got 10**400"),
    ("sync bounds", "sync.TensorGroup('experts', 2**30, 1000)", "ScenarioError",
     "model.groups.count: must be in [1, 16777216], got 1073741824"),
    ("sync bounds", "sync.ModelSpec.dense('m', 1e300)", "ScenarioError", "n_params: must be in [1, 1e15] parameters, got 1e+300"),
    ("sync bounds", "cluster_from_dict({'model': {'preset': 'qwen3-4b'}, 'hardware': {'pcie_bytes_per_s': 10**400}})",
     "ScenarioError", "pcie_bytes_per_s: must be in [1e3, 1e15] bytes/s, got 10**400"),
    ("sync bounds", "cluster_from_dict({'model': {'preset': 'qwen3-4b'}, 'fanout': 0})", "ScenarioError",
     "fanout: must be in [1, 1024], got 0"),
    ("sync bounds", "sync.estimate_many(sync.chapter_cluster('relay', 2), nic_bytes_per_s=[50e9, 1e-300])", "ScenarioError",
     "nic_bytes_per_s: must be in [1e3, 1e15] bytes/s, got 1e-300"),
    ("sync bounds", "rollsim._rollsim.sync_estimate(dict(sync.chapter_cluster('relay', 2).to_dict(), fanout=-3))", "ScenarioError",
     "fanout: must be in [1, 1024], got -3"),
    # ---------------------------------------------------------------- utilization over time
    ("bounds", "rollsim.resources.utilization_over_time(simulate(Scenario(horizon_s=60.0)), 1e-9)", "ScenarioError",
     "re:bin_s: gives \\d+ bins over the run's 60\\.\\d+ s, more than 1000000; pick bin_s >= end_s / 1000000 "
     "\\(e\\.g\\. 6\\.\\d+e-05 s\\), got 1e-09"),
    ("bounds", "rollsim.resources.utilization_over_time(simulate(Scenario(horizon_s=60.0)), -1)", "ScenarioError",
     "bin_s: must be finite and > 0, got -1.0"),
    ("bounds", "rollsim.plot.utilization_frame(pl.DataFrame({'start_s': [0.0], 'finish_s': [1.0]}), rollout_slots=1, "
               "end_s=1e6, bin_s=1e-3)", "ScenarioError",
     "bin_s: gives 1000000000 bins over the run's 1e+06 s, more than 1000000; pick bin_s >= end_s / 1000000 "
     "(e.g. 1.01 s), got 0.001"),
]
