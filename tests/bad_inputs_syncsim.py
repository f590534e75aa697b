"""Bad-input rows of the weight sync inside the pipeline simulation (format: see the top of
``tests/bad_inputs.py``): ``Scenario.sync_every``, ``Scenario.staleness_check`` and
``rollsim.sync.pipeline_fields``."""

from __future__ import annotations

_FINISH = "staleness_check: 'finish' changes how max_staleness is checked: it needs FullyAsync(max_staleness=...)"

ROWS: list[tuple[str, str, str, str]] = [
    ("sync in the pipeline", "Scenario(sync_every=0)", "ScenarioError", "sync_every: must be in [1, 16777216], got 0"),
    ("sync in the pipeline", "Scenario(sync_every=1.5)", "ScenarioError",
     "sync_every: must be an integer in [1, 16777216], got float 1.5"),
    ("sync in the pipeline", "Scenario(staleness_check='end')", "ScenarioError",
     "staleness_check: must be 'start' or 'finish', got 'end'"),
    ("sync in the pipeline", "Scenario(staleness_check='finish')", "ScenarioError", f"{_FINISH}, got pipeline FullyAsync()"),
    ("sync in the pipeline", "Scenario(staleness_check='finish', pipeline=Synchronous())", "ScenarioError",
     f"{_FINISH}, got pipeline Synchronous()"),
    ("sync in the pipeline", "cli('run', '--sync-every', '0')", "CliExit",
     "exit 2: rollsim: error: --sync-every: must be in [1, 16777216], got 0"),
    ("sync in the pipeline", "sync.pipeline_fields(-1.0)", "ScenarioError", "sync: must be in [0, 1e12] seconds, got -1.0"),
    ("sync in the pipeline", "sync.pipeline_fields('1.2')", "ScenarioError",
     "sync: must be a number of seconds in [0, 1e12], got str '1.2'"),
    ("sync in the pipeline", "sync.pipeline_fields(1.2, pause_s=2.0)", "ScenarioError",
     "pause_s: must be in [0, the sync (1.2 s)] seconds, got 2.0"),
    ("sync in the pipeline", "sync.pipeline_fields(1.2, pause_s=math.nan)", "ScenarioError",
     "pause_s: must be in [0, the sync (1.2 s)] seconds, got nan"),
    ("sync in the pipeline", "sync.pipeline_fields(1.2, pause_s='half')", "ScenarioError",
     "pause_s: must be a number of seconds, 'all' or 'pause_resume', got 'half'"),
    ("sync in the pipeline", "sync.pipeline_fields(1.2, pause_s='pause_resume')", "ScenarioError",
     "pause_s: 'pause_resume' takes the estimate's pause_resume_s term: it needs an Estimate, a StackEstimate or a "
     "Cluster, got sync=1.2"),
]
