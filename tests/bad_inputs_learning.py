"""Bad inputs of the learning-side model (``rollsim.learning``) and of the data sets' fitted tails, and
the exact error each gets; appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

RUN = "rollsim.simulate(Scenario(horizon_s=600.0, rng='python'))"
FIELDS = "['drift_exponent', 'drift_mean', 'drift_sd', 'noise_mean', 'noise_sd', 'tail_df']"

ROWS: list[tuple[str, str, str, str]] = [
    # ---------------------------------------------------------------- DriftModel
    ("learning", "rollsim.learning.DriftModel(noise_sd=-0.1)", "ScenarioError",
     "model.noise_sd: must be in [0, 10] nats, got -0.1"),
    ("learning", "rollsim.learning.DriftModel(drift_exponent=3)", "ScenarioError",
     "model.drift_exponent: must be in [0, 2], got 3"),
    ("learning", "rollsim.learning.DriftModel(tail_df=2)", "ScenarioError",
     "model.tail_df: must be in (2, 1e3], or None (Gaussian), got 2"),
    ("learning", "rollsim.learning.DriftModel(noise_mean=math.nan)", "ScenarioError",
     "model.noise_mean: must be in [-10, 10] nats, got nan"),
    ("learning", "rollsim.learning.DriftModel(drift_sd='0.1')", "ScenarioError",
     "model.drift_sd: must be a number of nats, got str '0.1'"),
    ("learning", "rollsim.learning.DriftModel(foo=1)", "ScenarioError",
     f"model.foo: unknown field of DriftModel (fields: {FIELDS})"),
    # ---------------------------------------------------------------- rules of learning()
    ("learning", f"rollsim.learning.learning({RUN}, clip_low=1.0)", "ScenarioError",
     "clip_low: must be in (0, 0.99], got 1.0"),
    ("learning", f"{RUN}.learning(clip_high=0)", "ScenarioError", "clip_high: must be in (0, 1e6], got 0"),
    ("learning", f"{RUN}.learning(tis_cap=0.5)", "ScenarioError", "tis_cap: must be in [1, 1e12], got 0.5"),
    ("learning", f"{RUN}.learning(icepop=(2, 5))", "ScenarioError",
     "icepop: must be (low, high) ratios with 0 <= low < 1 < high <= 1e12, got (2.0, 5.0)"),
    ("learning", f"{RUN}.learning(seq_mask=(0.5,))", "ScenarioError",
     "seq_mask: must be a pair (low, high) of ratios, got (0.5,)"),
    ("learning", f"{RUN}.learning(gspo_clip=(0, 1e-3))", "ScenarioError",
     "gspo_clip: must be (low, high) with 0 < low < 1 and 0 < high <= 1e6, got (0.0, 0.001)"),
    ("learning", f"{RUN}.learning(edges=[10, 5])", "ScenarioError",
     "edges: must be finite, non-empty and strictly increasing, got [10.0, 5.0]"),
    ("learning", f"{RUN}.learning(model=3)", "ScenarioError", "model: must be a rollsim.learning.DriftModel, got int"),
    ("learning", "rollsim.simulate(Scenario(horizon_s=600.0), record='summary').learning()", "ScenarioError",
     "record: per-sample rows were not recorded; run simulate(..., record='samples')"),
    ("learning", "rollsim.learning.token_stats([-1.0])", "ScenarioError",
     "staleness: must be finite and >= 0 versions, got [-1.0]"),
    ("learning", "rollsim.learning.fit_table(rollsim.learning.DriftModel(tail_df=4))", "ScenarioError",
     "model: fit_table evaluates Gaussian models only (tail_df=None)"),
    # ---------------------------------------------------------------- data sets and their tails
    ("learning", "rollsim.datasets.tail('sky-t1', mean_tokens=40000)", "ScenarioError",
     "mean_tokens: must be in (0, 32484) tokens (below max_tokens: a truncated mean never reaches it), got 40000.0"),
    ("learning", "rollsim.datasets.tail('r2')", "ScenarioError",
     "lengths: unknown data set 'r2' (built in: deepseek-r1, sky-t1)"),
    ("learning", "rollsim.datasets.sky_t1_longcot(finished_only=1)", "ScenarioError",
     "finished_only: must be True or False, got 1"),
]
ROWS += [
    ("learning", "rollsim.sweeps.learning_sweep(grid=[1])", "ScenarioError",
     "grid: must be a dict of field name -> list of values, got list"),
    ("learning", "rollsim.sweeps.learning_sweep(grid={'batch_size': []})", "ScenarioError",
     "grid.batch_size: must be a non-empty list of values, got []"),
    ("learning", "rollsim.sweeps.learning_sweep(seeds=3)", "ScenarioError",
     "seeds: must be a non-empty sequence of integers, got 3"),
    ("learning", "rollsim.sweeps.learning_sweep(grid={'foo': [1]})", "ScenarioError",
     "re:foo: unknown scenario field .*"),
]
ROWS += [
    ("learning", "rollsim.learning.LengthDrift('quadratic', 0.1)", "ScenarioError",
     "length_drift.kind: must be one of linear, log, exp, table, got 'quadratic'"),
    ("learning", "rollsim.learning.LengthDrift('linear', 200)", "ScenarioError",
     "length_drift.rate: must be in [-1, 100], got 200.0"),
    ("learning", "rollsim.learning.LengthDrift('table', table=((5, 1.0), (2, 2.0)))", "ScenarioError",
     "length_drift.table: versions must be finite, >= 0 and strictly increasing; item 1 has version 2.0"),
    ("learning", "rollsim.learning.LengthDrift('table')", "ScenarioError",
     "length_drift.table: must hold at least one (version, scale) pair"),
    ("learning", f"rollsim.learning.length_feedback({RUN}.learning(), 2)", "ScenarioError",
     "rate: must be in [0, 1], got 2"),
]
