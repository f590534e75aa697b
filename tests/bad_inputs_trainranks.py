"""Bad-input rows of the per-rank training model (``Scenario.train = TrainRanks(...)``; appended to
``tests/bad_inputs.py``'s table; same format)."""

from __future__ import annotations

import rollsim  # noqa: F401  (the rows' code names rollsim.TrainRanks)

ROWS: list[tuple[str, str, str, str]] = [
    # ---------------------------------------------------------------- the part's own fields
    ("train ranks", "rollsim.TrainRanks(dp_ranks=0)", "ScenarioError", "train.dp_ranks: must be in [1, 1048576], got 0"),
    ("train ranks", "rollsim.TrainRanks(dp_ranks=2.0)", "ScenarioError",
     "train.dp_ranks: must be an integer in [1, 1048576], got float 2.0"),
    ("train ranks", "rollsim.TrainRanks(dispatch='greedy')", "ScenarioError",
     "train.dispatch: must be one of ['contiguous', 'round_robin', 'balanced', 'balanced_minibatch', 'lpt', 'packed'], "
     "got 'greedy'"),
    ("train ranks", "rollsim.TrainRanks(s_per_token=-1e-6)", "ScenarioError",
     "train.s_per_token: must be in [0, 1e3] seconds/token, got -1e-06"),
    ("train ranks", "rollsim.TrainRanks(s_per_token_sq=2.0)", "ScenarioError",
     "train.s_per_token_sq: must be in [0, 1] seconds/token^2, got 2.0"),
    ("train ranks", "rollsim.TrainRanks(fixed_s=math.inf)", "ScenarioError", "train.fixed_s: must be in [0, 1e9] seconds, got inf"),
    ("train ranks", "rollsim.TrainRanks(mini_batches=0)", "ScenarioError", "train.mini_batches: must be in [1, 16777216], got 0"),
    ("train ranks", "rollsim.TrainRanks(dispatch='packed')", "ScenarioError",
     "train.max_tokens_per_gpu: dispatch='packed' needs the micro-batch token budget, got None"),
    ("train ranks", "rollsim.TrainRanks(max_tokens_per_gpu=8192.0)", "ScenarioError",
     "train.max_tokens_per_gpu: applies to dispatch='packed' only, got a budget"),
    ("train ranks", "rollsim.TrainRanks(dispatch='packed', max_tokens_per_gpu=0.5)", "ScenarioError",
     "train.max_tokens_per_gpu: must be in [1, 1e12] tokens, got 0.5"),
    ("train ranks", "rollsim.TrainRanks(nope=1)", "ScenarioError", "train.nope: unknown field of TrainRanks (fields: "
     "['dispatch', 'dp_ranks', 'fixed_s', 'max_tokens_per_gpu', 'mini_batches', 's_per_token', 's_per_token_sq'])"),
    # ---------------------------------------------------------------- against the scenario
    ("train ranks", "Scenario(train='balanced')", "ScenarioError", "train: must be None or TrainRanks(...), got 'balanced'"),
    ("train ranks", "Scenario(batch_size=512, train=rollsim.TrainRanks(dp_ranks=3))", "ScenarioError",
     "train.dp_ranks: dp_ranks (3) must divide batch_size (512): every rank trains as many samples"),
    ("train ranks", "Scenario(batch_size=64, train=rollsim.TrainRanks(dp_ranks=8, mini_batches=16, dispatch='balanced_minibatch'))",
     "ScenarioError",
     "train.dp_ranks: dp_ranks x mini_batches (128) must divide batch_size (64): every rank trains as many samples"),
    ("train ranks", "Scenario(batch_size=64, train=rollsim.TrainRanks(dp_ranks=8, mini_batches=16))", "ScenarioError",
     "train.mini_batches: must be at most the samples of one rank (batch_size / dp_ranks = 8), got 16"),
    ("train ranks", "Scenario(prompt_tokens=512.0, train=rollsim.TrainRanks(dispatch='packed', max_tokens_per_gpu=16384.0))",
     "ScenarioError", "train.max_tokens_per_gpu: must be >= prompt_tokens + the longest possible answer = 512.0 + "
     "16384.0 = 16896.0 tokens, got 16384.0"),
    ("train ranks", "Scenario.from_toml_str('[train]\\ndp_ranks = 3')", "ScenarioError",
     "train.dp_ranks: dp_ranks (3) must divide batch_size (512): every rank trains as many samples"),
]
