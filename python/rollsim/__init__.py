"""rollsim: a fast simulator of RL post-training pipelines for LLMs.

>>> import rollsim
>>> res = rollsim.simulate(rollsim.Scenario(rng="python"))   # the chapter's fully asynchronous run
>>> res.summary["steps"]
34
"""

from rollsim import datasets, plot, report, sync
from rollsim._rollsim import __version__
from rollsim.errors import (CalibrationPlausibilityWarning, DeploymentWarning, GenerationOutrunsTrainingWarning, MetricNearMissWarning,
                             MetricsRowsSkippedWarning,
                            NameAssumedWarning, NoTrainingStepWarning, RollsimError, RunLimitError, RunStalledWarning, ScenarioError,
                            StalenessCapLivelockWarning)
from rollsim.lengths import Empirical, LengthDrift, LogNormal
from rollsim.agentic import Agentic
from rollsim.pipelines import FullyAsync, LengthBalanced, OffPolicy, OneStepAsync, Synchronous
from rollsim.scenario import Scenario, TrainRanks
from rollsim.simulation import LONG_TOKENS, SHORT_TOKENS, Result, compare, simulate
from rollsim import presets, resources, simulation, sweeps, theory
from rollsim import learning, trajectories, validation
from rollsim.sweeps import aggregate, read_sweep, sweep
from rollsim.sweeps import space as sweep_space
from rollsim import configs
from rollsim.calibration import Calibrated, calibrate
from rollsim.what_if import whatif

__all__ = [
    "Scenario",
    "LogNormal",
    "Empirical",
    "Synchronous",
    "OneStepAsync",
    "OffPolicy",
    "FullyAsync",
    "LengthBalanced",
    "Agentic",
    "TrainRanks",
    "LengthDrift",
    "RunStalledWarning",
    "NoTrainingStepWarning",
    "StalenessCapLivelockWarning",
    "MetricNearMissWarning",
    "MetricsRowsSkippedWarning",
    "NameAssumedWarning",
    "DeploymentWarning",
    "CalibrationPlausibilityWarning",
    "simulate",
    "compare",
    "Result",
    "ScenarioError",
    "RollsimError",
    "RunLimitError",
    "GenerationOutrunsTrainingWarning",
    "SHORT_TOKENS",
    "LONG_TOKENS",
    "sweep",
    "aggregate",
    "read_sweep",
    "sweep_space",
    "sweeps",
    "simulation",
    "theory",
    "learning",
    "trajectories",
    "validation",
    "presets",
    "resources",
    "datasets",
    "plot",
    "report",
    "sync",
    "configs",
    "calibrate",
    "Calibrated",
    "whatif",
    "__version__",
]
