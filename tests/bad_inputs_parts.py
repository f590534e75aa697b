"""Bad parts (lengths and pipeline dicts) handed to the engine directly (``rollsim._rollsim.simulate``,
the form ``Scenario.to_dict()`` builds) and the exact error each gets: the engine extracts and checks
a part by the fields of its schema (``rollsim._rollsim.SCHEMA["parts"]``), with the messages the
Python classes print. Appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

D = "dict(rollsim.Scenario(horizon_s=60.0).to_dict(), "
LN = "{'kind': 'lognormal', 'mu': 7.6, 'sigma': 1.0, 'max_tokens': 16384.0, "
FA = "{'kind': 'fully_async', "

ROWS: list[tuple[str, str, str, str]] = [
    ("parts", f"rollsim._rollsim.simulate({D}lengths={LN}'mu': 'x'}}))", "ScenarioError",
     "lengths.mu: must be a number, got str 'x'"),
    ("parts", f"rollsim._rollsim.simulate({D}lengths={LN}'sigma': True}}))", "ScenarioError",
     "lengths.sigma: must be a number, got bool True"),
    ("parts", f"rollsim._rollsim.simulate({D}lengths={LN}'mu': 10**400}}))", "ScenarioError",
     "lengths.mu: must be in [-100, 100] (the log of the median length in tokens), got 10**400"),
    ("parts", f"rollsim._rollsim.simulate({D}lengths={LN}'group_correlation': 1}}))", "ScenarioError",
     "lengths.group_correlation: must be in [0, 1), got 1.0"),
    ("parts", f"rollsim._rollsim.simulate({D}lengths={LN}'max_tokens': None}}))", "ScenarioError",
     "lengths.max_tokens: missing"),
    ("parts", f"rollsim._rollsim.simulate({D}pipeline={FA}'max_ready_groups': 0}}))", "ScenarioError",
     "pipeline.max_ready_groups: must be in [1, 4294967295], got 0"),
    ("parts", f"rollsim._rollsim.simulate({D}pipeline={FA}'max_lag_samples': 0}}))", "ScenarioError",
     "pipeline.max_lag_samples: must be in [1, 9223372036854775807], got 0"),
    ("parts", f"rollsim._rollsim.simulate({D}pipeline={FA}'admission_eta': 1.5}}))", "ScenarioError",
     "pipeline.admission_eta: must be an integer in [0, 4294967295], got float 1.5"),
    ("parts", f"rollsim._rollsim.simulate({D}pipeline={{'kind': 'off_policy', 'k': 1, 'over_sampling': 10**400}}))",
     "ScenarioError", "pipeline.over_sampling: must be in [0, 1e6], or math.inf (keep every slot busy), got 10**400"),
    ("parts", f"rollsim._rollsim.simulate({D}pipeline={{'kind': 'off_policy', 'k': 1, 'over_sampling': 'x'}}))",
     "ScenarioError", "pipeline.over_sampling: must be a number, or math.inf (keep every slot busy), got str 'x'"),
    ("parts", "rollsim.FullyAsync(on_stale=['drop'])", "ScenarioError",
     "pipeline.on_stale: must be 'drop' or 'requeue', got ['drop']"),
]
