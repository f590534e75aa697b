"""Parameter sweeps: many scenarios x seeds, in parallel, streamed to parquet, resumable, on Ray.

>>> from rollsim.sweeps import sweep, aggregate, latin_hypercube
"""

from rollsim.sweeps._keys import run_key, scenario_key
from rollsim.sweeps._run import SUMMARY_SCHEMA, SweepInfo, sweep, sweep_with_info
from rollsim.sweeps._store import StoreWarning, read_sweep, scan_sweep
from rollsim.sweeps import space
from rollsim.sweeps.space import (Choice, IntUniform, LatinHypercube, LogUniform, RandomPoints, Uniform, latin_hypercube,
                                 random_points)
from rollsim.sweeps.stats import aggregate, t_quantile
from rollsim.sweeps.learning import SWEEP_METRICS, learning_sweep

__all__ = [
    "sweep",
    "aggregate",
    "read_sweep",
    "scan_sweep",
    "StoreWarning",
    "latin_hypercube",
    "random_points",
    "LatinHypercube",
    "RandomPoints",
    "Uniform",
    "LogUniform",
    "IntUniform",
    "Choice",
    "t_quantile",
    "run_key",
    "scenario_key",
    "SUMMARY_SCHEMA",
    "SweepInfo",
    "sweep_with_info",
    "learning_sweep",
    "SWEEP_METRICS",
    "space",
]
