"""No tracked file outside tests/ points at material a user who cloned the repository does not have:
the developers' private ``../shared`` folder (its notes, spec and data) or this project's internal
issue numbers. Public sources are cited instead: a paper (arXiv id), a repository and path, a URL, or
a public project's own issue ("verl issue 4896", "sgl-project/sglang issue 30848")."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Paths into the private folder, and the phrase that used to cite it.
PRIVATE = re.compile(r"\.\./shared|shared/(?:notes|spec|data)\b|\bspec/chapter\.txt|\bthe notes\b", re.I)

#: "issue N" (or "issues N and M", "issue #N").
ISSUE = re.compile(r"\bissues?\s+#?\d+", re.I)

#: Public projects whose issues we cite as "<project> issue N" (an owner/repo before it is also fine).
PROJECTS = {"verl", "sglang", "vllm", "vime", "areal", "slime", "miles", "nemo-rl", "prime-rl", "skyrl",
            "pipelinerl", "roll", "unirl", "marin", "trl", "torchtitan", "awesome-ml-sys-tutorial"}


def _tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (e.g. an sdist): walk it
        names = [os.path.relpath(os.path.join(d, f), ROOT) for d, dirs, files in os.walk(ROOT)
                 for f in files if not {".git", "target", ".venv", "__pycache__"} & set(Path(d).parts)]
    return [ROOT / n for n in names if not n.startswith("tests/")]


def _text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def bare_issue_refs(text: str) -> list[str]:
    """The "issue N" mentions in ``text`` that no public project's name (or owner/repo) precedes."""
    bad = []
    for m in ISSUE.finditer(text):
        # the word before it, across a line break and past an opening bracket or quote
        before = [w.strip("()[]{}*`'\",;:") for w in text[max(0, m.start() - 80):m.start()].split()]
        word = next((w for w in reversed(before) if w), "").lower()
        if word in PROJECTS or re.fullmatch(r"[\w.-]+/[\w.-]+", word):
            continue
        bad.append(f"{word} {m.group(0)}".strip())
    return bad


def test_the_issue_pattern():
    assert bare_issue_refs("see verl issue 4896 and sgl-project/sglang issue 30848") == []
    assert bare_issue_refs("(verl issues 4449 and 6780), Awesome-ML-SYS-Tutorial issue 169") == []
    assert bare_issue_refs("**verl**\nissue #12") == []
    assert bare_issue_refs("Weight-sync estimator (issue 5): how") == ["estimator issue 5"]
    assert bare_issue_refs('"""Issue 3: groups') == ["Issue 3"]
    assert bare_issue_refs("as discussed in issue #11; (verl issue 7)") == ["in issue #11"]
    assert PRIVATE.search("read ../shared/spec/chapter.txt") and PRIVATE.search("(shared/notes/x.md)")
    assert PRIVATE.search("quoted in the notes") and not PRIVATE.search("notes/semantics")


def test_no_private_paths_or_internal_issue_numbers():
    files = _tracked_files()
    assert any(f.name == "README.md" for f in files)
    found = []
    for path in files:
        text = _text(path)
        if text is None:
            continue
        rel = path.relative_to(ROOT)
        for n, line in enumerate(text.splitlines(), 1):
            if PRIVATE.search(line):
                found.append(f"{rel}:{n}: {line.strip()}")
        for ref in bare_issue_refs(text):
            found.append(f"{rel}: {ref!r} (name the public project, e.g. 'verl issue 4896')")
    assert not found, "\n".join(found)
