"""The docs' examples run as written: no placeholder file a reader cannot find.

Each block below is read from the docs themselves and run from an empty temporary directory. Paths
such as ``python/rollsim/examples/sweep.toml`` are a checkout's (the docs' commands run from its
root), so the directory gets a ``python`` link to this tree's; Python blocks name packaged files
(``rollsim.sync.EXAMPLES``) and need no link. Before, ``my_cluster.toml`` (docs/sync_stacks.md),
``my.toml`` (docs/sync_in_pipeline.md) and ``out/sweep`` (the Python block of docs/plots.md) did not
exist.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from rollsim import cli

ROOT = Path(__file__).resolve().parent.parent
PYTHON_DIR = Path(cli.__file__).resolve().parent.parent


def _block(doc: str, lang: str, marker: str) -> str:
    """The one ``lang`` code block of ``docs/doc`` that contains ``marker``."""
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    found = [b for b in re.findall(r"```" + lang + r"\n(.*?)```", text, re.S) if marker in b]
    assert len(found) == 1, f"{doc}: {len(found)} {lang} blocks contain {marker!r}"
    return found[0]


def _no_placeholders(block: str) -> None:
    assert not re.search(r"\bmy[_.]|\[\.\.\.\]", block), block


@pytest.mark.parametrize(("doc", "marker"), [
    ("sync_stacks.md", "calibrate("),
    ("sync_in_pipeline.md", "load_weight_sync("),
    ("weight_sync.md", "load_weight_sync("),
])
def test_sync_python_blocks_run(doc, marker, tmp_path, monkeypatch):
    block = _block(doc, "python", marker)
    _no_placeholders(block)
    monkeypatch.chdir(tmp_path)
    if "python/rollsim/" in block:   # a checkout's path
        (tmp_path / "python").symlink_to(PYTHON_DIR)
    ns: dict = {}
    exec(compile(block, doc, "exec"), ns)
    if "cal" in ns:
        fitted = ns["cal"].fitted
        assert fitted == {"efficiency": pytest.approx(0.23551, abs=1e-5)}   # 12 s measured on the example cluster
        assert ns["cal"].predict(model=["kimi-k2", "qwen3-235b-a22b"])["model"].to_list() == ["Kimi-K2", "Qwen3-235B-A22B"]
    if "sc" in ns:
        assert (ns["sc"].weight_sync_s, ns["sc"].rollout_pause_s) == (0.0, pytest.approx(8.07955, abs=1e-5))


def test_plots_blocks_run(tmp_path, monkeypatch, capsys):
    """The sweep's Python block, then every command of the command-line block, in order."""
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    block = _block("plots.md", "python", "read_sweep(")
    _no_placeholders(block)
    ns: dict = {}
    exec(compile(block, "plots.md", "exec"), ns)
    assert ns["frame"].height == 4 * 3 * 3 and (tmp_path / "heat.png").stat().st_size > 0
    (tmp_path / "python").symlink_to(PYTHON_DIR)
    lines = [ln.split("#")[0].strip() for ln in _block("plots.md", "sh", "rollsim sweep").splitlines()]
    commands = [shlex.split(ln) for ln in lines if ln]
    assert len(commands) == 12 and all(c[0] == "rollsim" for c in commands)
    for c in commands:
        assert cli.main(c[1:]) == 0, (c, capsys.readouterr().err)
    for f in ("out/run/report.html", "cmp.md", "out/sweep/report.md", "fig.png", "timeline.svg", "util.png",
              "steps.pdf", "heat.png", "lines.png"):
        assert (tmp_path / f).stat().st_size > 0, f
