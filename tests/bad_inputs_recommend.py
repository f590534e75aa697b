"""Bad-input rows of the GPU-split recommendation, the run guards, the presets and the
weight-sync ranking (appended to ``tests/bad_inputs.py``'s table; same format)."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    # ---------------------------------------------------------------- pipelines and presets
    ("pipeline", "FullyAsync(lag_release='sync')", "ScenarioError",
     "pipeline.lag_release: 'sync' releases places under max_lag_samples: it needs max_lag_samples (an integer >= "
     "batch_size)"),
    ("pipeline", "FullyAsync(max_lag_samples=512, lag_release='soon')", "ScenarioError",
     "pipeline.lag_release: must be 'take' or 'sync', got 'soon'"),
    ("presets", "presets.verl_fully_async(0, gated_on_sync=1)", "ScenarioError",
     "gated_on_sync: must be True or False, got 1"),
]
