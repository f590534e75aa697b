"""Bad inputs of the engine's event budget (``rollsim._rollsim.simulate(..., max_events=N)``: the pool's
own events, KV preemptions, evictions, shared-prefill ends and speed refreshes, counted beside the
summary's) and the exact error each gets; appended to the table of ``tests/bad_inputs.py`` (see its
format)."""

from __future__ import annotations

_SIM = "rollsim._rollsim.simulate(Scenario(horizon_s=%s).to_dict(), False, 2**32 - 1, False, %s)"
_MUST = "max_events: must be an integer >= 1 or None (no limit), got "

ROWS: list[tuple[str, str, str, str]] = [
    ("engine budget", _SIM % ("60.0", "0"), "ScenarioError", _MUST + "0"),
    ("engine budget", _SIM % ("60.0", "-5"), "ScenarioError", _MUST + "-5"),
    ("engine budget", _SIM % ("60.0", "True"), "ScenarioError", _MUST + "True"),
    ("engine budget", _SIM % ("60.0", "1.5"), "ScenarioError", _MUST + "1.5"),
    ("engine budget", _SIM % ("60.0", "2**64"), "ScenarioError", _MUST + "18446744073709551616"),
    # checked every 65,536 events: the first check past 1,000 is at 65,536
    ("engine budget", _SIM % ("3.6e5", "1000"), "RunLimitError",
     "max_events: the run processed more than 1000 events (finishes, tool returns, steps and the pool's own: KV "
     "preemptions, evictions, shared-prefill ends, speed refreshes) and had not ended; shorten horizon_s or "
     "raise max_events"),
]
