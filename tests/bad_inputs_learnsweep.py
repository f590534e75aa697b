"""Bad inputs of the learning metrics of summary-mode runs (``rollsim.learning.summary_learning``,
``rollsim.sweep(learning=...)``, the ``[learning]`` table of sweep files, ``rollsim.plot.learning_tradeoff``)
and the exact error each gets; appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

import re

SEQ = "sequence-level rules need each sample's spans, which summary mode does not keep: use " \
      "rollsim.sweeps.learning_sweep (samples mode)"
BASE = "rollsim.Scenario(horizon_s=60.0)"

ROWS: list[tuple[str, str, str, str]] = [
    ("learning sweeps", 'rollsim.learning.summary_learning(pl.DataFrame({"steps": [1]}), seq_cap=3.0)', "ScenarioError",
     f"seq_cap: {SEQ}"),
    ("learning sweeps", 'rollsim.learning.summary_learning(pl.DataFrame({"steps": [1]}), cap=3.0)', "ScenarioError",
     "cap: unknown rule (summary mode takes ['clip_low', 'clip_high', 'tis_cap', 'icepop', 'seed'])"),
    ("learning sweeps", 'rollsim.learning.summary_learning(pl.DataFrame({"steps": [1]}))', "ScenarioError",
     "re:frame: lacks the columns \\['tokens_stale_0', .*'end_s'\\] \\(a frame of summary-mode runs of this rollsim, "
     "from rollsim.sweep or simulate_many, has them\\)"),
    ("learning sweeps", "rollsim.learning.summary_learning([1, 2])", "ScenarioError",
     "frame: must be a polars DataFrame or LazyFrame of summary-mode runs, got list"),
    ("learning sweeps", "rollsim.learning.summary_exprs(tis_cap=0.5)", "ScenarioError",
     "tis_cap: must be in [1, 1e12], got 0.5"),
    ("learning sweeps", f'rollsim.sweep({BASE}, learning={{"gspo_clip": (1e-4, 1e-4)}}, progress=False)',
     "ScenarioError", f"learning.gspo_clip: {SEQ}"),
    ("learning sweeps", f'rollsim.sweep({BASE}, learning={{"clip": 0.2}}, progress=False)', "ScenarioError",
     "learning.clip: unknown key (allowed: ['clip_high', 'clip_low', 'drift_exponent', 'drift_mean', 'drift_sd', "
     "'icepop', 'noise_mean', 'noise_sd', 'seed', 'tail_df', 'tis_cap'])"),
    ("learning sweeps", f"rollsim.sweep({BASE}, learning=1, progress=False)", "ScenarioError",
     "learning: must be True or a dict of drift-model fields and token rules, got 1"),
    ("learning sweeps", f'rollsim.sweep({BASE}, learning={{"drift_sd": -1.0}}, progress=False)', "ScenarioError",
     "model.drift_sd: must be in [0, 10] nats, got -1.0"),
    ("learning sweeps", "cli('sweep', toml('[base]\\nhorizon_s = 60.0\\n[learning]\\nseq_mask = [0.0, 3.0]\\n'), "
     "'--out', write('o', ''))", "CliExit",
     "re:" + re.escape(f"exit 2: rollsim: error: learning.seq_mask: {SEQ} (in the sweep file '") + ".*/s\\.toml'\\)"),
]
