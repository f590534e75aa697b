"""One row of the resource validation table (:mod:`rollsim.hardware.validation`): a published
measurement and how the model predicts it. Its own module, so that the parts that add rows
(training, switching) and the table that gathers them import it without importing each other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .serving import EngineParams, engine_params

__all__ = ["Row"]


@dataclass(frozen=True)
class Row:
    """One published measurement and how the model predicts it.

    Attributes
    ----------
    label : str
        Short name.
    setting : str
        The setting as published (model, GPUs, engine, workload).
    quantity : str
        What is compared, with its unit ("TPOT ms", "output tok/s", "TTFT ms", ...).
    measured : float
        The published value, in ``quantity``'s unit.
    source : str
        Repository + path, issue or PR, or paper.
    time_s : Callable[[EngineParams], float]
        The model's time for the measured quantity (a step, a time to first token, seconds per request).
    measured_time_s : float
        The same time, from the published value.
    display : Callable[[float], float]
        From the model's time to ``quantity``'s unit.
    fit : bool
        Whether the global fit uses the row (False: a held-out check).
    area : str
        "decode", "prefill", "training", "switching".
    note : str
        Assumptions (derived concurrency, lengths).
    """

    label: str
    setting: str
    quantity: str
    measured: float
    source: str
    time_s: Callable[[EngineParams], float] = field(repr=False)
    measured_time_s: float
    display: Callable[[float], float] = field(repr=False)
    fit: bool = True
    area: str = "decode"
    note: str = ""

    @classmethod
    def from_prediction(cls, r: dict, *, quantity: str, area: str) -> Row:
        """A row whose prediction does not depend on the serving fit (training, switching): ``r``
        holds ``label``, ``case``, ``measured``, ``predicted``, ``source``, ``in_fit`` and ``note``,
        in ``quantity``'s unit (seconds or a ratio)."""
        predicted = r["predicted"]
        return cls(label=r["label"], setting=r["case"], quantity=quantity, measured=r["measured"],
                   source=r["source"], time_s=lambda _params: predicted, measured_time_s=r["measured"],
                   display=lambda t: t, fit=r["in_fit"], area=area, note=r["note"])

    def predicted(self, params: EngineParams | None = None) -> float:
        """The model's value in ``quantity``'s unit."""
        return self.display(self.time_s(params or engine_params("vllm")))
