"""Derives ``python/rollsim/configs/slime_options.txt``: the command-line option names of slime's
``train.py`` / ``train_async.py`` and of the Megatron-LM parser they extend.

Reads two git checkouts (no import of either package: neither installs without CUDA):

- THUDM/slime: every ``--name`` literal given to ``add_argument`` or ``reset_arg`` in
  ``slime/utils/arguments.py`` (``add_slime_arguments``, ``_pre_parse_mode``) and
  ``slime/backends/sglang_utils/arguments.py`` (the SGLang router and server options slime adds
  itself; SGLang's own ``ServerArgs`` are added there as ``--sglang-<name>``, sglang_router's
  ``RouterArgs`` as ``--router-<name>``: both prefixes are passed through, not listed);
- NVIDIA/Megatron-LM at the commit slime's ``docker/Dockerfile`` pins (``MEGATRON_COMMIT``): every
  ``--name`` literal of ``add_argument`` in ``megatron/training/arguments.py``, and the options
  ``ArgumentGroupFactory`` (``megatron/training/argument_utils.py``) generates from the dataclasses
  named there: ``--field-name`` for each field not excluded and with ``init``, ``--no-field-name`` and
  ``--disable-field-name`` instead for a bool field whose default is not False, the names of a
  field's ``argparse_meta`` ``arg_names`` instead when it gives them;
- the options slime's own Megatron patches add (``docker/patch/*/megatron*.patch`` in THUDM/slime,
  the ``add_argument`` lines they add).

``argparse.BooleanOptionalAction`` options also get their ``--no-<name>``.

Usage::

    python scripts/derive_slime_options.py SLIME_GIT_DIR MEGATRON_GIT_DIR > python/rollsim/configs/slime_options.txt
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

SLIME_FILES = ("slime/utils/arguments.py", "slime/backends/sglang_utils/arguments.py")
MEGATRON_ARGS = "megatron/training/arguments.py"


def show(git_dir: str, commit: str, path: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def commit_of(git_dir: str, rev: str) -> tuple[str, str]:
    out = subprocess.run(["git", "--git-dir", git_dir, "log", "-1", "--format=%H %cs", rev], check=True,
                         capture_output=True, text=True).stdout.split()
    return out[0], out[1]


def literal_flags(source: str, calls: tuple[str, ...]) -> set[str]:
    """The ``--name`` string literals among the positional arguments of calls named ``calls``."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in calls:
                negated = any(kw.arg == "action" and ast.unparse(kw.value).endswith("BooleanOptionalAction")
                              for kw in node.keywords)
                for a in node.args:
                    if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--"):
                        out.add(a.value)
                        if negated:  # argparse.BooleanOptionalAction adds --no-<name>
                            out.add("--no-" + a.value[2:])
    return out


def patch_flags(git_dir: str, commit: str) -> set[str]:
    """The ``--name`` literals of ``add_argument`` calls that slime's Megatron patches add
    (``docker/patch/*/megatron*.patch``, every release's: the added lines)."""
    files = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", commit, "docker/patch/"],
                           check=True, capture_output=True, text=True).stdout.split()
    out = set()
    for path in files:
        if re.fullmatch(r"docker/patch/[^/]+/megatron[^/]*\.patch", path):
            for line in show(git_dir, commit, path).splitlines():
                if line.startswith("+") and not line.startswith("+++"):
                    out |= set(re.findall(r"add_argument\(\s*['\"](--[A-Za-z0-9][A-Za-z0-9_-]*)['\"]", line))
    return out


def factory_uses(source: str) -> list[tuple[str, set[str]]]:
    """``(dataclass name, excluded fields)`` of each ``ArgumentGroupFactory(Cls, exclude=...)``; an
    ``exclude=name`` is resolved to the list literal last assigned to ``name``."""
    tree = ast.parse(source)
    lists: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            lists[node.targets[0].id] = {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "ArgumentGroupFactory":
            cls = node.args[0].id  # type: ignore[attr-defined]
            exclude: set[str] = set()
            for kw in node.keywords:
                if kw.arg == "exclude":
                    if isinstance(kw.value, ast.List):
                        exclude = {e.value for e in kw.value.elts if isinstance(e, ast.Constant)}
                    elif isinstance(kw.value, ast.Name):
                        exclude = lists[kw.value.id]
            uses.append((cls, exclude))
    return uses


def class_index(git_dir: str, commit: str) -> dict[str, tuple[str, ast.ClassDef]]:
    """Every class of Megatron's ``megatron/`` package: name -> (path, node)."""
    files = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", commit, "megatron/"],
                           check=True, capture_output=True, text=True).stdout.split()
    out: dict[str, tuple[str, ast.ClassDef]] = {}
    for path in files:
        if not path.endswith(".py"):
            continue
        text = show(git_dir, commit, path)
        if "@dataclass" not in text:
            continue
        for node in ast.parse(text).body:
            if isinstance(node, ast.ClassDef):
                out.setdefault(node.name, (path, node))
    return out


def _is_bool(ann: ast.expr) -> bool:
    text = ast.unparse(ann).replace(" ", "")
    return text in ("bool", "Optional[bool]", "bool|None", "None|bool", "typing.Optional[bool]")


def dataclass_flags(cls: str, index: dict[str, tuple[str, ast.ClassDef]], exclude: set[str]) -> set[str]:
    """The flags ``ArgumentGroupFactory`` builds for ``cls`` (its fields and its bases' fields)."""
    fields: dict[str, tuple[ast.AnnAssign, ast.ClassDef]] = {}
    chain = []
    name: str | None = cls
    while name in index:
        node = index[name][1]
        chain.append(node)
        name = node.bases[0].id if node.bases and isinstance(node.bases[0], ast.Name) else None
    for node in reversed(chain):  # base fields first, a subclass's redefinition wins
        for st in node.body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                fields[st.target.id] = (st, node)
    flags = set()
    for fname, (st, _) in fields.items():
        if fname in exclude or "ClassVar" in ast.unparse(st.annotation) or "InitVar" in ast.unparse(st.annotation):
            continue
        default: object = None
        names: list[str] | None = None
        value = st.value
        if isinstance(value, ast.Call) and ast.unparse(value.func) in ("field", "dataclasses.field"):
            kws = {kw.arg: kw.value for kw in value.keywords}
            if "init" in kws and isinstance(kws["init"], ast.Constant) and kws["init"].value is False:
                continue
            if "default" in kws and isinstance(kws["default"], ast.Constant):
                default = kws["default"].value
            meta = kws.get("metadata")
            if isinstance(meta, ast.Dict):
                for k, v in zip(meta.keys, meta.values):
                    if isinstance(k, ast.Constant) and k.value == "argparse_meta" and isinstance(v, ast.Dict):
                        for k2, v2 in zip(v.keys, v.values):
                            if isinstance(k2, ast.Constant) and k2.value == "arg_names" and isinstance(v2, ast.List):
                                names = [e.value for e in v2.elts if isinstance(e, ast.Constant)]
        elif isinstance(value, ast.Constant):
            default = value.value
        if names is not None:
            flags.update(names)
        elif _is_bool(st.annotation) and default is not False:
            flags.update({"--no-" + fname.replace("_", "-"), "--disable-" + fname.replace("_", "-")})
        else:
            flags.add("--" + fname.replace("_", "-"))
    return flags


def main(slime_git: str, megatron_git: str) -> None:
    slime_commit, slime_date = commit_of(slime_git, "HEAD")
    dockerfile = show(slime_git, slime_commit, "docker/Dockerfile")
    pinned = re.search(r"ARG MEGATRON_COMMIT=([0-9a-f]{40})", dockerfile)
    assert pinned, "docker/Dockerfile pins no MEGATRON_COMMIT"
    meg_commit, meg_date = commit_of(megatron_git, pinned.group(1))
    slime = set()
    for path in SLIME_FILES:
        slime |= literal_flags(show(slime_git, slime_commit, path), ("add_argument", "reset_arg"))
    src = show(megatron_git, meg_commit, MEGATRON_ARGS)
    megatron = literal_flags(src, ("add_argument",))
    index = class_index(megatron_git, meg_commit)
    for cls, exclude in factory_uses(src):
        assert cls in index, f"{cls}: no such dataclass in megatron/"
        megatron |= dataclass_flags(cls, index, exclude)
    patched = patch_flags(slime_git, slime_commit) - megatron - slime
    print("# slime's option names, for the typo check of slime launch scripts (rollsim.configs.slime), derived by")
    print("# scripts/derive_slime_options.py. 'slime' rows: the add_argument / reset_arg names of")
    print(f"# {' and '.join(SLIME_FILES)} in THUDM/slime at commit {slime_commit} ({slime_date}).")
    print("# 'megatron' rows: the names of Megatron-LM's parser, which slime extends (megatron/training/arguments.py, its")
    print("# add_argument calls and the ArgumentGroupFactory dataclass groups), in NVIDIA/Megatron-LM at commit")
    print(f"# {meg_commit} ({meg_date}), the MEGATRON_COMMIT of slime's docker/Dockerfile.")
    print("# 'megatron-patch' rows: the options slime's Megatron patches add (docker/patch/*/megatron*.patch, same slime")
    print("# commit).")
    print("# Passed through unchecked: --sglang-* (SGLang ServerArgs, added by slime with that prefix) and --router-*")
    print("# (sglang_router RouterArgs, use_router_prefix=True).")
    for f in sorted(slime):
        print(f"{f} slime")
    for f in sorted(megatron - slime):
        print(f"{f} megatron")
    for f in sorted(patched):
        print(f"{f} megatron-patch")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
