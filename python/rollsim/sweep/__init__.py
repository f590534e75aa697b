"""Parameter sweeps: many scenarios x seeds, in parallel, streamed to parquet, resumable, on Ray.

>>> from rollsim.sweep import sweep, aggregate, latin_hypercube
"""

from rollsim.sweep._keys import run_key, scenario_key
from rollsim.sweep._run import SUMMARY_SCHEMA, SweepInfo, sweep, sweep_with_info
from rollsim.sweep._store import read_sweep, scan_sweep
from rollsim.sweep import space
from rollsim.sweep.space import (Choice, IntUniform, LatinHypercube, LogUniform, RandomPoints, Uniform, latin_hypercube,
                                 random_points)
from rollsim.sweep.stats import aggregate, t_quantile

__all__ = [
    "sweep",
    "aggregate",
    "read_sweep",
    "scan_sweep",
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
    "space",
]
