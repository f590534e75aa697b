"""Bad-input rows of the run-time guard on KV preemptions (instances with many slots and little KV;
appended to ``tests/bad_inputs.py``'s table; same format)."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    ("runaway", "simulate(Scenario(rollout_slots=1_000_000, slots_per_instance=1_000_000, kv_cache_tokens=4e6, "
     "horizon_s=20.0), record='summary')", "RunLimitError",
     "max_events: this scenario would process about 1.19e+10 events (about 1.19e+06 samples; about 1.19e+10 of them "
     "the work of its first KV preemptions, each summing the KV of every request still running on its instance: "
     "fewer slots_per_instance or more kv_cache_tokens make them fewer) over horizon_s = 20 s, about 13 min at ~15 M "
     "events/s, more than max_events = 1000000000 (a run-time guard; record='summary' keeps memory constant); "
     "shorten horizon_s, or raise max_events (None: no limit) if you mean it"),
    ("runaway", "cli('run', '--rollout-slots', '1000000', '--slots-per-instance', '1000000', '--kv-cache-tokens', "
     "'4000000', '--horizon-s', '20')", "CliExit",
     "exit 2: rollsim: error: --max-events: this scenario would process about 1.19e+10 events (about 1.19e+06 "
     "samples; about 1.19e+10 of them the work of its first KV preemptions, each summing the KV of every request "
     "still running on its instance: fewer --slots-per-instance or more --kv-cache-tokens make them fewer) over "
     "--horizon-s = 20 s, about 13 min at ~15 M events/s, more than --max-events = 1000000000 (a run-time guard; a "
     "run without --out keeps memory constant); shorten --horizon-s, or raise --max-events (0: no limit) if you mean "
     "it"),
    ("runaway", "cli('split', '--model', 'Qwen3-8B', '--gpu', 'H100', '--gpus', '8', '--max-num-seqs', '100000')",
     "CliExit",
     "exit 2: rollsim: error: --max-events: the 7 splits would process about 4.13e+09 events (about 4.6 min, "
     "3.33e+09 of them the work of the first KV preemptions, each summing the KV of every request still running on "
     "its instance: fewer --max-num-seqs make them fewer), more than --max-events = 1000000000; give fewer "
     "--gpus or a larger --gpus-per-instance, a shorter --horizon-s, or raise --max-events (0: no limit)"),
]
