"""Bad scenario dicts handed to the engine directly (``rollsim._rollsim.simulate``, the form
``Scenario.to_dict()`` builds) and the exact error each gets: the engine extracts the dict in one
typed pass by the names, defaults and ranges of its schema (``rollsim._rollsim.SCHEMA``), so a bad
value is refused naming the field and its range, never with an ``OverflowError``. Appended to the
table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

D = "dict(rollsim.Scenario(horizon_s=60.0).to_dict(), "
INST = "dict(rollsim.Scenario(horizon_s=60.0, slots_per_instance=8).to_dict(), "

ROWS: list[tuple[str, str, str, str]] = [
    ("schema", f"rollsim._rollsim.simulate({D}rollout_slots=-1))", "ScenarioError",
     "rollout_slots: must be in [1, 16777216], got -1"),
    ("schema", f"rollsim._rollsim.simulate({D}batch_size=2**40))", "ScenarioError",
     "batch_size: must be in [1, 16777216], got 1099511627776"),
    ("schema", f"rollsim._rollsim.simulate({D}seed=2**64))", "ScenarioError",
     "seed: must be in [0, 2**64 - 1], got 2**64"),
    ("schema", f"rollsim._rollsim.simulate({D}seed=-1))", "ScenarioError", "seed: must be in [0, 2**64 - 1], got -1"),
    ("schema", f"rollsim._rollsim.simulate({D}group_size=True))", "ScenarioError",
     "group_size: must be an integer in [1, 16777216], got bool True"),
    ("schema", f"rollsim._rollsim.simulate({D}slots_per_instance=2.0))", "ScenarioError",
     "slots_per_instance: must be an integer in [0, 16777216], got float 2.0"),
    ("schema", f"rollsim._rollsim.simulate({D}horizon_s='60'))", "ScenarioError",
     "horizon_s: must be a number of seconds, got str '60'"),
    ("schema", f"rollsim._rollsim.simulate({D}train_step_s=10**400))", "ScenarioError",
     "train_step_s: must be in [0, 1e12] seconds, got 10**400"),
    ("schema", f"rollsim._rollsim.simulate({D}weight_sync_s=-1.0))", "ScenarioError",
     "weight_sync_s: must be in [0, 1e12] seconds, got -1.0"),
    ("schema", f"rollsim._rollsim.simulate({D}logprob_s_per_token=1e4))", "ScenarioError",
     "logprob_s_per_token: must be in [0, 1e3] seconds/token, got 10000.0"),
    ("schema", f"rollsim._rollsim.simulate({INST}kv_cache_tokens=0.0))", "ScenarioError",
     "kv_cache_tokens: must be in [1, 1e15] tokens, or None (unlimited), got 0.0"),
    ("schema", f"rollsim._rollsim.simulate({D}prefix_sharing=1))", "ScenarioError",
     "prefix_sharing: must be True or False, got int 1"),
    ("schema", f"rollsim._rollsim.simulate({D}rng=1))", "ScenarioError", "rng: must be 'python' or 'fast', got int 1"),
    ("schema", f"rollsim._rollsim.simulate({INST}decode_throughput_table=5))", "ScenarioError",
     "decode_throughput_table: must be a list of [running sequences (integer >= 1), tokens/s] pairs, got int 5"),
    ("schema", f"rollsim._rollsim.simulate({D}pipeline=5))", "ScenarioError", "pipeline: must be a dict, got int 5"),
    ("schema", "rollsim._rollsim.simulate({'pipeline': {'kind': 'fully_async'}})", "ScenarioError", "lengths: missing"),
    ("schema", "rollsim._rollsim.throughput_ratio({'lengths': {'kind': 'lognormal', 'mu': 7.6, 'sigma': 1.0, "
     "'max_tokens': 16384.0}, 'pipeline': {'kind': 'fully_async'}, 'rollout_slots': 0})", "ScenarioError",
     "rollout_slots: must be in [1, 16777216], got 0"),
]
