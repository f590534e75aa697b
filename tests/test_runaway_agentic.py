"""The pre-run size estimate of agentic batch-pipeline runs counts the groups that replace those a
failed tool call drops (``on_failure="drop"``)."""

from __future__ import annotations

import pytest

from rollsim import Agentic, FullyAsync, OneStepAsync, Scenario, Synchronous, simulate
from rollsim.simulation import estimate_size, failure_drop_error, group_survival


def test_group_survival_rule():
    # 10 turns, no stop coin: 9 calls per trajectory; a group of 8 survives with (1 - f) ** 72
    calls, p = group_survival(Scenario(group_size=8, pipeline=Synchronous(), agentic=Agentic(failure_rate=0.5)))
    assert calls == 9.0
    assert p == pytest.approx(0.5 ** 72, rel=1e-12)
    # stop_prob 0.5, max_turns 3: P(no failing call) = 0.5 + 0.5 * 0.9 * (0.5 + 0.5 * 0.9)
    a = Agentic(max_turns=3, stop_prob=0.5, failure_rate=0.1)
    calls, p = group_survival(Scenario(group_size=2, pipeline=Synchronous(), agentic=a))
    assert calls == pytest.approx(0.75)
    assert p == pytest.approx((0.5 + 0.45 * 0.95) ** 2)
    # nothing is replaced: fully async, retried calls, no failures
    for sc in (Scenario(group_size=8, pipeline=FullyAsync(), agentic=Agentic(failure_rate=0.5)),
               Scenario(group_size=8, pipeline=Synchronous(), agentic=Agentic(failure_rate=0.5, on_failure="retry")),
               Scenario(group_size=8, pipeline=Synchronous(), agentic=Agentic())):
        assert group_survival(sc) is None and failure_drop_error(sc) is None


@pytest.mark.parametrize("rate, group, turns, pipeline", [
    (0.05, 4, 5, Synchronous()), (0.1, 8, 3, Synchronous()), (0.2, 4, 4, OneStepAsync()), (0.02, 8, 10, Synchronous()),
])
def test_estimate_counts_replaced_groups(rate, group, turns, pipeline):
    sc = Scenario(horizon_s=1200.0, group_size=group, pipeline=pipeline,
                  agentic=Agentic(max_turns=turns, failure_rate=rate))
    started = simulate(sc, record="summary").summary["samples_started"]
    assert started > 2 * sc.batch_size  # replacement groups ran (the estimate without them: one batch)
    est = estimate_size(sc)["samples"]
    assert started / 2 <= est <= 2 * started
