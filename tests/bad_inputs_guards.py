"""Bad inputs of the command line's run guards (``--max-samples``, ``--max-events``) and choice flags;
appended to :data:`tests.bad_inputs.ROWS`."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    ("CLI", "cli('run', '--horizon-s', '1e8', '--out', write('x', '')[:-1] + 'out')", "CliExit",
     "exit 2: rollsim: error: --max-samples: this scenario would start about 2.45e+08 samples (45.3 GB of recorded rows "
     "with --out) over --horizon-s = 1e+08 s, more than --max-samples = 50000000; leave out --out (the summary alone "
     "keeps memory constant), shorten --horizon-s, or raise --max-samples (up to 2**32 - 1) if you mean it"),
    ("CLI", "cli('compare', '--horizon-s', '4e5', '--max-events', '1000')", "CliExit",
     "exit 2: rollsim: error: --max-events: this scenario would process about 3.39e+05 events (about 3.38e+05 samples) "
     "over --horizon-s = 400000 s, about 0.023 s at ~15 M events/s, more than --max-events = 1000 (a run-time guard; a "
     "run without --out keeps memory constant); shorten --horizon-s, or raise --max-events (0: no limit) if you mean it"),
    ("CLI", "cli('run', '--max-events', '-1')", "CliExit",
     "exit 2: rollsim: error: --max-events: must be an integer >= 0 (0: no limit), got -1"),
    ("CLI", "cli('run', '--max-samples', '0')", "CliExit",
     "exit 2: rollsim: error: --max-samples: must be an integer in [1, 2**32 - 1], got 0"),
    ("CLI", "cli('split', '--gpus', '8', '--gpu-s-per-token', '1e-4', '--max-events', '-2')", "CliExit",
     "exit 2: rollsim: error: --max-events: must be an integer >= 0 (0: no limit), got -2"),
    ("CLI", "cli('run', '--on-update', 'abort-dro')", "CliExit",
     "exit 2: rollsim run: error: argument --on-update: invalid choice: 'abort-dro' (choose from 'continue', "
     "'abort_drop', 'abort_resubmit', 'wait', 'keep_recompute', 'keep_stale'); did you mean 'abort_drop'?"),
    ("CLI", "cli('presets', '--max-samples', '3')", "CliExit",
     "exit 2: rollsim: error: unrecognized arguments: --max-samples 3"),
]
