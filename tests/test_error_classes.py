"""The error classes: one base, picklable (they cross Ray and multiprocessing boundaries), module ``rollsim``."""

from __future__ import annotations

import multiprocessing
import pickle

import pytest

import rollsim
from rollsim import RollsimError, RunLimitError, Scenario, ScenarioError, _rollsim


def _refused(kwargs: dict) -> None:
    Scenario(**kwargs)


@pytest.mark.parametrize("cls, bases", [(ScenarioError, (RollsimError, ValueError)),
                                        (RunLimitError, (RollsimError, RuntimeError))])
def test_hierarchy_and_module(cls: type, bases: tuple[type, ...]) -> None:
    assert all(issubclass(cls, b) for b in bases)
    assert cls.__module__ == "rollsim" and getattr(rollsim, cls.__name__) is cls


def test_engine_raises_the_python_classes_and_they_pickle() -> None:
    with pytest.raises(ScenarioError) as info:
        _rollsim.simulate({"bad": 1})
    e = pickle.loads(pickle.dumps(info.value))
    assert type(e) is ScenarioError and str(e) == "lengths: missing"
    with pytest.raises(RunLimitError) as limit:
        _rollsim.simulate(Scenario(horizon_s=3600.0).to_dict(), False, 10, False)
    e2 = pickle.loads(pickle.dumps(limit.value))
    assert type(e2) is RunLimitError and str(e2).startswith("max_samples: the run would start more than 10 samples")


def test_crosses_a_process_boundary() -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        with pytest.raises(ScenarioError, match=r"^rollout_slots: must be in \[1, 16777216\], got 0$"):
            pool.apply(_refused, ({"rollout_slots": 0},))
