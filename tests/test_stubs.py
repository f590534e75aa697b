"""The .pyi stubs of the compiled extension list every function it exports, with its parameters."""

import ast
import inspect
import os

from rollsim import _rollsim

STUB = os.path.join(os.path.dirname(__file__), "..", "python", "rollsim", "_rollsim.pyi")


def test_stubs_match_the_extension():
    with open(STUB, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    stubbed = {n.name: [a.arg for a in n.args.args] for n in tree.body if isinstance(n, ast.FunctionDef)}
    exported = {name for name in dir(_rollsim) if callable(getattr(_rollsim, name)) and not name.startswith("_")
                and not isinstance(getattr(_rollsim, name), type)}
    assert exported == set(stubbed), exported ^ set(stubbed)
    for name in exported:
        params = list(inspect.signature(getattr(_rollsim, name)).parameters)
        assert params == stubbed[name], name
