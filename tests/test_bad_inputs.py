"""One test per row of the bad-input table (tests/bad_inputs.py, also docs/errors.md): the exact
exception type and message. Rows not already in tests/test_errors.py (which checks field prefixes)."""

from __future__ import annotations

import contextlib
import io
import math  # noqa: F401  (the rows' code strings are evaluated in this module's namespace)
import os  # noqa: F401
import re
import subprocess
import sys
from pathlib import Path

import numpy as np  # noqa: F401
import polars as pl
import pytest

import rollsim
# the submodules the rows name (``rollsim.hardware.serving.X``), imported here so that each row runs alone
# too, not only after a row that happened to import its module
import rollsim.calibration
import rollsim.configs
import rollsim.hardware.held_out
import rollsim.hardware.serving
import rollsim.hardware.switching
import rollsim.hardware.training
import rollsim.learning
import rollsim.resources
import rollsim.sweeps
import rollsim.what_if  # noqa: F401
from rollsim import (Empirical, FullyAsync, LengthBalanced, LogNormal, OffPolicy, OneStepAsync, Scenario,  # noqa: F401
                     ScenarioError, Synchronous, presets, simulate, sync)
from rollsim.sweeps import config as sweep_config  # noqa: F401
from rollsim.sync import cluster_from_dict, load_cluster  # noqa: F401

from bad_inputs import ROWS

ROOT = Path(__file__).resolve().parent.parent


class CliExit(Exception):
    """The command line exited with a non-zero code (``exit N: last stderr line``)."""


def namespace(tmp: Path) -> dict:
    def write(name: str, data: str | bytes | None) -> str:
        p = tmp / name
        if isinstance(data, str):
            p.write_text(data)
        elif isinstance(data, bytes):
            p.write_bytes(data)
        return str(p)

    def parquet(columns: dict) -> bytes:
        buf = io.BytesIO()
        pl.DataFrame(columns).write_parquet(buf)
        return buf.getvalue()

    def toml(text: str) -> str:
        return write("s.toml", text)

    def cli(*args: str) -> None:
        from rollsim.cli import main

        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main(list(args))
            except SystemExit as e:  # argparse
                code = e.code
        if code:
            lines = [line for line in err.getvalue().splitlines() if line.strip()]
            raise CliExit(f"exit {code}: {lines[-1] if lines else ''}")

    return dict(globals(), write=write, parquet=parquet, toml=toml, cli=cli)


def check(code: str, kind: str, message: str, tmp: Path) -> None:
    ns = namespace(tmp)
    with pytest.raises(BaseException) as e:
        eval(code, ns)
    got = e.value
    assert type(got).__name__ == kind, f"{type(got).__name__}: {got}"
    if kind == "ScenarioError":
        assert isinstance(got, ValueError)
    text = str(got)
    if message.startswith("re:"):
        assert re.fullmatch(message[3:], text, flags=re.S), text
    else:
        assert text == message


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("category, code, kind, message", ROWS, ids=[f"{i:03d}-{r[0]}" for i, r in enumerate(ROWS)])
def test_bad_input(category, code, kind, message, tmp_path):
    check(code, kind, message, tmp_path)


def test_table_is_large_and_distinct():
    assert len(ROWS) >= 50
    assert len({r[1] for r in ROWS}) == len(ROWS)
    from test_errors import CASES  # noqa: F401  (the older table; its inputs are lambdas, not repeated here)


def test_errors_doc_is_current():
    """docs/errors.md is generated from the table: `python scripts/gen_errors_doc.py`."""
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_errors_doc.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
