"""The examples in the docstrings run and print what they show: every module under python/rollsim
that has examples (``>>>``) is imported and run with ``doctest.testmod``."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import rollsim

MODULES = ["rollsim", *sorted(m.name for m in pkgutil.walk_packages(rollsim.__path__, prefix="rollsim."))]


def _examples(name: str) -> int:
    return sum(len(t.examples) for t in doctest.DocTestFinder().find(importlib.import_module(name)))


WITH_EXAMPLES = [name for name in MODULES if _examples(name)]


def test_every_module_is_walked_and_some_have_examples():
    assert {"rollsim.scenario", "rollsim.sync.replay", "rollsim.sweeps.space", "rollsim.cli"} <= set(MODULES)
    assert {"rollsim", "rollsim.sync", "rollsim.sync.replay", "rollsim.sweeps.space"} <= set(WITH_EXAMPLES)


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed (output above)"
