"""Type stubs of the compiled extension ``rollsim._rollsim`` (rust/rollsim-py)."""

from typing import Any, Callable

import numpy as np
import numpy.typing as npt

__version__: str

class ScenarioError(ValueError):
    """A scenario field is outside its allowed range; the message starts with the field's name."""

def simulate(scenario: dict[str, Any], record_samples: bool = True, max_samples: int = 50_000_000) -> dict[str, Any]:
    """Runs one scenario dict (``Scenario.to_dict()``); returns ``{"summary", "samples", "steps"}``."""

def simulate_many(
    scenarios: list[dict[str, Any]],
    threads: int = 0,
    max_samples: int = 50_000_000,
    progress: Callable[[int, int], object] | None = None,
) -> list[dict[str, Any] | BaseException]:
    """Runs many scenario dicts in summary mode across threads; one summary dict or exception each."""

def py_random_stream(seed: int, n: int) -> npt.NDArray[np.float64]: ...
def py_lognormal_stream(seed: int, mu: float, sigma: float, n: int) -> npt.NDArray[np.float64]: ...
