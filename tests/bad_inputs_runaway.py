"""Runaway agentic scenarios of the batch pipelines (a group a failed tool call drops is replaced by
a new group) and the exact error each gets; appended to the table of ``tests/bad_inputs.py`` (see
its format)."""

from __future__ import annotations

_DROP = ("agentic.failure_rate: must be at most about 0.199 here, got 0.5: with group_size 8 and about 9 tool calls per "
         "trajectory, a group survives with probability 2.12e-22; the batch pipelines replace a group a failed call "
         "drops, so a training step of batch_size 512 needs about 2.42e+24 samples started, more than one run can start "
         "(2**32 - 1); lower failure_rate, use on_failure='retry', fewer turns (max_turns, stop_prob) or a smaller "
         "group_size, or the fully-async pipeline")

ROWS: list[tuple[str, str, str, str]] = [
    ("runaway", "simulate(Scenario(group_size=8, pipeline=OneStepAsync(), agentic=rollsim.Agentic(failure_rate=0.5)))",
     "ScenarioError", _DROP),
    ("runaway", "simulate(Scenario(group_size=8, pipeline=Synchronous(), agentic=rollsim.Agentic(failure_rate=0.15)))", "RunLimitError",
     "max_samples: this scenario would start about 6.18e+07 samples (11.4 GB of recorded rows with record='samples') "
     "over horizon_s = 7200 s, more than max_samples = 50000000; use record='summary' (constant memory), shorten "
     "horizon_s, or raise max_samples (up to 2**32 - 1) if you mean it"),
    ("CLI", "cli('run', '--agentic-preset', 'default', '--pipeline', 'sync', '--failure-rate', '0.5', '--group-size', "
            "'8', '--horizon-s', '60')", "CliExit", "exit 2: rollsim: error: --failure-rate" + _DROP.removeprefix("agentic.failure_rate")),
    ("CLI", "cli('run', '--agentic-preset', 'default', '--pipeline', 'one-step', '--failure-rate', '0.5', "
            "'--group-size', '8', '--horizon-s', '60')", "CliExit", "exit 2: rollsim: error: --failure-rate" + _DROP.removeprefix("agentic.failure_rate")),
]
