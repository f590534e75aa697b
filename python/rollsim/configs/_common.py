"""What every framework importer shares: the import notes (``Note``), the option reader, and the step from a framework's
settings (already in rollsim's units) to a :class:`~rollsim.Scenario` and a weight-sync cluster."""

from __future__ import annotations

import difflib
import functools
import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollsim._text import count
from rollsim.errors import ScenarioError, invalid
from rollsim.lengths import LogNormal
from rollsim.pipelines import FullyAsync, OffPolicy, OneStepAsync, Synchronous
from rollsim.scenario import Scenario

__all__ = ["Note", "ImportedConfig", "Layout", "Reader", "build", "read_yaml", "split_command", "script_commands", "trainer_command", "MISSING",
           "known_options", "unknown_option_notes", "UNKNOWN_OPTION", "CONFIG_NOT_FOUND"]

MISSING = object()


@dataclass(frozen=True)
class Note:
    """One line of an import's account.

    Attributes
    ----------
    option : str
        The framework's option name as the user writes it (``data.train_batch_size``,
        ``--rollout-batch-size``).
    value : str
        The value read (``repr``), or the framework's default for an absent option.
    became : str
        What rollsim made of it (``batch_size = 4096 samples (1024 prompts x rollout.n 4)``), or why
        it was ignored.
    kind : "read" | "default" | "assumed" | "ignored"
        ``read``: given in the config; ``default``: absent, the framework's documented default was
        used; ``assumed``: no option gives it, rollsim assumed a value (calibrate it from a run's
        metrics); ``ignored``: given, but rollsim does not model it.
    """

    option: str
    value: str
    became: str
    kind: str


@dataclass(frozen=True)
class Layout:
    """The GPU layout an import read, in GPUs (used by :func:`rollsim.whatif` to scale a GPU split).

    Attributes
    ----------
    rollout_gpus : int
        GPUs that run inference (all of them when colocated).
    train_gpus : int
        GPUs that train.
    colocated : bool
        Rollout and training take turns on the same GPUs.
    rollout_tp : int
        Tensor-parallel size of one inference engine (GPUs per engine).
    slots_per_engine : int
        Concurrent sequences one engine runs (``max_num_seqs`` and equivalents).
    """

    rollout_gpus: int
    train_gpus: int
    colocated: bool
    rollout_tp: int = 1
    slots_per_engine: int = 256

    @property
    def engines(self) -> int:
        """Inference engines (``rollout_gpus // rollout_tp``, at least 1)."""
        return max(1, self.rollout_gpus // max(1, self.rollout_tp))


@dataclass(frozen=True)
class ImportedConfig:
    """A framework's config read into rollsim (:func:`rollsim.configs.load`).

    Attributes
    ----------
    framework : str
        ``"verl"``, ``"areal"``, ``"slime"`` or ``"openrlhf"``.
    source : str
        The file read.
    scenario : Scenario
        The run as a scenario (speeds and training costs the config cannot give are assumptions, see
        ``notes``; :func:`rollsim.calibrate` fits them on a run's metrics).
    deployment : object or None
        A ``rollsim.hardware.Deployment`` when the config names the hardware and that module is
        available; ``None`` otherwise (a note says why).
    sync : rollsim.sync.Cluster or None
        The weight-sync cluster, when the model is one of :data:`rollsim.sync.MODELS`.
    notes : tuple of Note
        Every option read, defaulted, assumed or ignored, with what it became.
    layout : Layout
        GPUs of each side, read from the config.
    prompts_per_step : int
        Prompts per training step (``scenario.batch_size // scenario.group_size``).
    max_response_tokens : float
        The config's answer-length limit, tokens.
    model : str or None
        The model path or name the config trains.
    train_backend : str or None
        The training backend the config names (``"fsdp2"`` or ``"megatron"``,
        :data:`rollsim.hardware.training.BACKENDS`), None when it names none rollsim models.
    steps_per_logged_step : int
        Scenario training steps per row of the framework's own per-step metrics: 1, except for the
        verl fully_async recipe, which logs once per parameter sync (``trigger_parameter_sync_step``
        local updates, their ``timing_s/*`` summed: volcengine/verl
        ``verl/experimental/fully_async_policy/fully_async_trainer.py``,
        ``_trigger_parameter_sync_after_step``, and ``detach_utils.py``, ``MetricsAggregator``).
    fully_async : rollsim.configs.verl.FullyAsyncCadence or None
        The verl fully_async recipe's cadence and rollout bounds as read (local updates per sync,
        prompts per update, staleness threshold, concurrency per server); None for any other config.
        :func:`rollsim.whatif` takes it for a variant whose ``pipeline`` is this config.
    """

    framework: str
    source: str
    scenario: Scenario
    deployment: Any
    sync: Any
    notes: tuple[Note, ...]
    layout: Layout
    prompts_per_step: int
    max_response_tokens: float
    model: str | None = None
    train_backend: str | None = None
    steps_per_logged_step: int = 1
    fully_async: Any = None

    @property
    def unknown_options(self) -> tuple[Note, ...]:
        """Notes of the options the framework does not have (a typo such as ``a.b.nn=8``), each
        ``ignored: unknown option ...`` with the closest names (``difflib``) when there are any."""
        return tuple(n for n in self.notes if n.became.startswith(UNKNOWN_OPTION))

    def warnings(self) -> list[str]:
        """One line per unknown option, and per config file a launch script names that is not there
        (what ``rollsim import`` and ``run --config`` print on stderr):
        ``rollsim: warning: actor_rollout_ref.rollout.nn=8: unknown option (did you mean
        'actor_rollout_ref.rollout.n'?)``."""
        return [f"rollsim: warning: {n.option}={n.value}: {n.became[len('ignored: '):]}" for n in self.notes
                if n.became.startswith((UNKNOWN_OPTION, CONFIG_NOT_FOUND))]

    def notes_table(self) -> str:
        """``notes`` as aligned text lines (``kind  option = value -> became``)."""
        lines = []
        for n in self.notes:
            lines.append(f"{n.kind:<8} {n.option} = {n.value} -> {n.became}")
        return "\n".join(lines)

    def notes_frame(self):
        """``notes`` as a polars frame with columns ``kind``, ``option``, ``value``, ``became``."""
        import polars as pl

        return pl.DataFrame({"kind": [n.kind for n in self.notes], "option": [n.option for n in self.notes],
                             "value": [n.value for n in self.notes], "became": [n.became for n in self.notes]},
                            schema={"kind": pl.String, "option": pl.String, "value": pl.String, "became": pl.String})


class Reader:
    """Reads options from a flat ``{dotted name: value}`` mapping and keeps the import notes.

    ``get`` marks an option used; :meth:`ignore_rest` writes an ``ignored`` note for every option of
    the config that nothing read (only for names under the given prefixes, so that unrelated keys
    such as logger settings do not flood the import notes).
    """

    def __init__(self, options: dict[str, Any], where: str) -> None:
        self.options = options
        self.where = where
        self.notes: list[Note] = []
        self.used: set[str] = set()

    def has(self, name: str) -> bool:
        return name in self.options and self.options[name] is not None

    def get(self, name: str, default: Any = MISSING, *, kind: type | tuple[type, ...] | None = None,
            aliases: tuple[str, ...] = ()) -> tuple[Any, bool]:
        """``(value, given)``: the option's value (or ``default`` when absent); ``given`` is False
        for a default. A value of the wrong type raises ``ScenarioError`` naming the option."""
        for n in (name, *aliases):
            if self.has(n):
                self.used.add(n)
                v = self.options[n]
                if kind is not None and not _is(v, kind):
                    raise invalid(n, f"must be {_kind_name(kind)} in {self.where}, got {type(v).__name__} {v!r}")
                return v, True
            self.used.add(n)
        if default is MISSING:
            raise invalid(name, f"is required in {self.where} and was not given")
        return default, False

    def positive_int(self, name: str, default: Any = MISSING, *, lo: int = 1, hi: int = 2**24,
                     aliases: tuple[str, ...] = ()) -> tuple[int, bool]:
        v, given = self.get(name, default, kind=int, aliases=aliases)
        if not lo <= v <= hi:
            raise invalid(name, f"must be in [{lo}, {hi}], got {v}")
        return int(v), given

    def number(self, name: str, default: Any = MISSING, *, lo: float = 0.0, hi: float = 1e12,
               aliases: tuple[str, ...] = ()) -> tuple[float, bool]:
        v, given = self.get(name, default, kind=(int, float), aliases=aliases)
        if not (math.isfinite(float(v)) and lo <= float(v) <= hi):
            raise invalid(name, f"must be in [{lo:g}, {hi:g}], got {v!r}")
        return float(v), given

    def flag(self, name: str, default: bool, *, aliases: tuple[str, ...] = ()) -> tuple[bool, bool]:
        v, given = self.get(name, default, aliases=aliases)
        if isinstance(v, str) and v.lower() in ("true", "false"):
            v = v.lower() == "true"
        if not isinstance(v, bool):
            raise invalid(name, f"must be true or false in {self.where}, got {v!r}")
        return v, given

    def memory_fraction(self, name: str) -> float | None:
        """An engine's GPU memory fraction (vLLM ``gpu_memory_utilization``): None when absent, else a
        number in (0, 1]; ScenarioError naming the option otherwise (``85`` is a percentage)."""
        v, given = self.get(name, None, kind=(int, float))
        if not given:
            return None
        if not (math.isfinite(float(v)) and 0.0 < float(v) <= 1.0):
            raise invalid(name, f"must be in (0, 1] (a fraction of each GPU's memory, not a percentage), got {v!r}")
        return float(v)

    def note(self, option: str, value: Any, became: str, kind: str) -> None:
        self.notes.append(Note(option, value if isinstance(value, str) else repr(value), became, kind))

    def read(self, option: str, value: Any, given: bool, became: str) -> None:
        """A note for an option read (or defaulted)."""
        self.note(option, value, became if given else f"{became} (framework default)", "read" if given else "default")

    def model_path(self, option: str, *, aliases: tuple[str, ...] = ()) -> str | None:
        """The model path of ``option`` (None when absent), noted when given: it names the
        weight-sync cluster's model when rollsim knows it."""
        model, given = self.get(option, None, kind=str, aliases=aliases)
        if given:
            self.read(option, model, given, "model (weight-sync cluster when known)")
        return model

    def ignore(self, option: str, why: str) -> None:
        if self.has(option):
            self.used.add(option)
            self.note(option, self.options[option], f"ignored: {why}", "ignored")

    def ignore_rest(self, prefixes: tuple[str, ...], why: str = "not modelled by rollsim") -> None:
        for name in sorted(self.options):
            if name in self.used or self.options[name] is None:
                continue
            if any(name == p or name.startswith(p) for p in prefixes):
                self.used.add(name)
                self.note(name, self.options[name], f"ignored: {why}", "ignored")


#: How an unknown option's note starts (``Note.became``).
UNKNOWN_OPTION = "ignored: unknown option"
#: The start of the note of a config file a launch script names (verl's ``--config-name``) that is not there.
CONFIG_NOT_FOUND = "ignored: config file not found"


@functools.cache
def known_options(framework: str) -> tuple[frozenset[str], frozenset[str]]:
    """``(names, open nodes)`` of a framework's options, read from ``<framework>_options.txt`` beside
    this module (each file says which framework files and commit it was generated from). Names
    below an open node (a free-form mapping) are not checked."""
    path = Path(__file__).resolve().parent / f"{framework}_options.txt"
    names, open_nodes = set(), set()
    for line in path.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, mark = line.partition(" ")
        names.add(name)
        if mark.strip() == "*":
            open_nodes.add(name)
    return frozenset(names), frozenset(open_nodes)


@functools.cache
def _leaves(framework: str, sep: str) -> tuple[str, ...]:
    """The known names with nothing below them (what a typo is most likely meant to be)."""
    names, open_nodes = known_options(framework)
    inner = {sep.join(n.split(sep)[:i]) for n in names for i in range(1, n.count(sep) + 1)} if sep else set()
    return tuple(sorted(n for n in names if n not in inner or n in open_nodes))


def unknown_option_notes(r: Reader, framework: str, names: list[str], *, sep: str = ".",
                         extra: set[str] | frozenset[str] = frozenset(), none_such: str | None = None) -> None:
    """Notes ``ignored: unknown option (did you mean ...?)`` for the ``names`` (dotted overrides or
    ``--arguments`` as written) that the framework does not have; ``extra``: names the user's own
    files define (accepted as they are). A name below a known free-form mapping (an open node of the
    options file) is accepted. The suggestions are the
    closest known names by ``difflib.get_close_matches`` (ratio at least 0.75, at most three); without
    any, the note says ``none_such`` (default ``"<framework> has none such"``)."""
    known, open_nodes = known_options(framework)
    inner = {sep.join(n.split(sep)[:i]) for n in extra for i in range(1, n.count(sep) + 1)} if sep else set()
    candidates = sorted(set(_leaves(framework, sep)) | {n for n in extra if n not in inner})
    for name in names:
        if name in known or name in extra:
            continue
        parts = name.split(sep) if sep else [name]
        prefixes = [sep.join(parts[:i]) for i in range(len(parts) - 1, 0, -1)] if sep else []
        if any(p in open_nodes for p in prefixes):
            continue
        close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.75)
        hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else f" ({none_such or framework + ' has none such'})"
        r.used.add(name)
        r.note(name, r.options.get(name, True), UNKNOWN_OPTION + hint, "ignored")


def _is(v: Any, kind: type | tuple[type, ...]) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(v, bool):
        return bool in kinds
    return isinstance(v, kinds)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if kinds == (int,):
        return "an integer"
    if set(kinds) == {int, float}:
        return "a number"
    if kinds == (str,):
        return "a string"
    return " or ".join(k.__name__ for k in kinds)


def scalar(text: str) -> Any:
    """A command-line value as YAML would read it (``1024`` int, ``0.1`` float, ``True`` bool,
    ``null`` None, else the string)."""
    t = text.strip()
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none", "~"):
        return None
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        pass
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    return t


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists kept as values)."""
    out: dict[str, Any] = {}
    if isinstance(tree, dict):
        for k, v in tree.items():
            name = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict) and v:
                out.update(flatten(v, name))
            else:
                out[name] = v
    return out


_INTERP = re.compile(r"\$\{([^{}]+)\}")


def resolve(flat: dict[str, Any]) -> dict[str, Any]:
    """Resolves Hydra / OmegaConf interpolations ``${a.b}`` and ``${oc.select:a.b,default}`` between
    the flat options (up to 10 levels); others (``${oc.env:...}``) are left as strings."""

    def one(value: Any, depth: int) -> Any:
        if not isinstance(value, str) or "${" not in value or depth > 10:
            return value
        whole = _INTERP.fullmatch(value.strip())

        def target(expr: str) -> Any:
            expr = expr.strip()
            if expr.startswith("oc.select:"):
                key, _, dflt = expr[len("oc.select:"):].partition(",")
                key = key.strip()
                if key in flat and flat[key] is not None:
                    return one(flat[key], depth + 1)
                return scalar(dflt) if dflt else None
            if ":" in expr:
                return MISSING
            if expr in flat:
                return one(flat[expr], depth + 1)
            return MISSING

        if whole:
            t = target(whole.group(1))
            return value if t is MISSING else t

        def sub(m: re.Match) -> str:
            t = target(m.group(1))
            return m.group(0) if t is MISSING else str(t)

        return _INTERP.sub(sub, value)

    return {k: one(v, 0) for k, v in flat.items()}


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML file as a nested dict (PyYAML's safe loader); ScenarioError for a file that is not a
    YAML mapping."""
    try:
        import yaml  # type: ignore[import-untyped]  # PyYAML, the YAML reader of the frameworks themselves
    except ImportError as e:  # pragma: no cover - PyYAML ships with the test environment
        raise invalid("config", "reading a YAML config needs PyYAML (pip install pyyaml)") from e
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise invalid("config", f"{path} is not valid YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise invalid("config", f"{path} must hold a YAML mapping of options, got {type(data).__name__}")
    return data


_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _arith(expr: str, env: dict[str, str]) -> str | None:
    """A shell ``$(( ... ))`` integer expression, or None when it uses something else."""
    def name(m: re.Match) -> str:
        v = env.get(m.group(1), "")
        return v if re.fullmatch(r"-?\d+", v) else "x"

    e = re.sub(r"\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?", name, expr)
    if not re.fullmatch(r"[0-9+\-*/%() ]+", e) or "**" in e:
        return None
    try:
        return str(int(eval(e.replace("/", "//"), {"__builtins__": {}}, {})))  # digits and operators only
    except (ArithmeticError, SyntaxError):
        return None


def _arith_line(line: str, env: dict[str, str]) -> str:
    """Every ``$(( ... ))`` of a line (balanced parentheses) replaced by its integer value."""
    out, i = [], 0
    while True:
        j = line.find("$((", i)
        if j < 0:
            out.append(line[i:])
            return "".join(out)
        depth, k = 0, j + 1
        while k < len(line):
            depth += {"(": 1, ")": -1}.get(line[k], 0)
            if depth == 0:
                break
            k += 1
        expr = line[j + 3:k - 1]
        val = _arith(expr, env) if k < len(line) and line[k - 1] == ")" else None
        out.append(line[i:j] + (val if val is not None else line[j:k + 1]))
        i = k + 1


def _expand(word: str, env: dict[str, str]) -> str:
    """Shell expansion of one word: ``${NAME:-default}`` (nested), ``${NAME}`` and ``$NAME`` from the
    script's own assignments (unknown names without a default are kept as written)."""
    out, i = [], 0
    while i < len(word):
        if word.startswith("${", i):
            depth, k = 0, i + 1
            while k < len(word):
                depth += {"{": 1, "}": -1}.get(word[k], 0)
                if depth == 0:
                    break
                k += 1
            body = word[i + 2:k]
            m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)(?::?-(.*))?$", body, flags=re.S)
            if m and m.group(1) in env:
                out.append(env[m.group(1)])
            elif m and m.group(2) is not None:
                out.append(_expand(m.group(2), env))
            else:
                out.append(word[i:k + 1])
            i = k + 1
            continue
        m = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)", word[i:])
        if m:
            out.append(env.get(m.group(1), m.group(0)))
            i += len(m.group(0))
            continue
        out.append(word[i])
        i += 1
    return "".join(out)


def split_command(text: str) -> list[str]:
    """The words of a launch script's training command: line continuations joined, comments
    dropped, shell variable assignments (``NAME=value``, ``export NAME=value``) applied to the words
    after them (``$NAME``, ``${NAME}``, ``${NAME:-default}``, ``$((integer arithmetic))``), then
    ``shlex`` splitting. Variables the script does not set are kept as written (``$NNODES``).
    Every command's words, one after another: :func:`script_commands` keeps them apart."""
    return [w for line in _script_lines(text) for w in line]


def _script_lines(text: str):
    """The words of each logical line of a script (continuations and multi-line quotes joined), with
    its variable assignments applied and consumed."""
    joined = re.sub(r"\\\r?\n", " ", text)
    env: dict[str, str] = {}
    lines = joined.splitlines()
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        i += 1
        if not s or s.startswith("#"):
            continue
        first = s
        while True:  # a quoted string may span lines (slime's RUNTIME_ENV_JSON="{ ... }"): join them
            try:
                parts = shlex.split(_arith_line(s, env), comments=True)
                break
            except ValueError as e:
                if "closing quotation" not in str(e) or i >= len(lines):
                    end = " (a quote opened on this line is not closed by the end of the file)" if s != first else ""
                    raise invalid("config", f"cannot split the command line {first[:60]!r}: {e}{end}") from None
                s = s + "\n" + lines[i]
                i += 1
        if parts and parts[0] == "export":
            parts = parts[1:]
        if len(parts) == 1 and _ASSIGN.match(parts[0]) and not parts[0].endswith("=("):
            key, _, val = parts[0].partition("=")
            env[key] = _expand(val, env)
            continue
        yield [_expand(w, env) for w in parts]


#: Shell control operators that end a command (as words of their own after ``shlex`` splitting).
_CONTROL = frozenset({"|", "||", "&&", ";", "&", "|&", ";;", "(", ")", "{", "}"})
#: Shell keywords that may start a command's words (``then python train.py ...``).
_KEYWORDS = frozenset({"then", "do", "else", "elif", "exec", "nohup", "time", "!"})
_ARRAY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\(")


def script_commands(text: str) -> list[list[str]]:
    """A launch script split into its commands, each a list of words (as :func:`split_command`
    reads them): a new line, ``;``, ``&&``, ``||``, ``|``, ``&`` and a subshell's parentheses end a
    command; backslash continuations and multi-line quotes do not, nor does a shell array's
    ``NAME=( ... )`` over several lines (one command: its words, brackets included). Leading shell
    keywords (``then``, ``do``, ``nohup``, ...) are dropped."""
    commands: list[list[str]] = []
    cur: list[str] = []
    in_array = False
    sub = 0   # open subshells

    def close() -> None:
        nonlocal cur
        while cur and cur[0] in _KEYWORDS:
            cur = cur[1:]
        if cur:
            commands.append(cur)
        cur = []

    for line in _script_lines(text):
        for w in line:
            if in_array:
                cur.append(w)
                if w.endswith(")"):
                    in_array = False
                    close()
                continue
            if w in _CONTROL:
                sub = max(0, sub + {"(": 1, ")": -1}.get(w, 0))
                close()
                continue
            if not cur and w.startswith("(") and not w.startswith("(("):   # ``(cd dir && ...)``: a subshell
                w, sub = w[1:], sub + 1
                if not w:
                    continue
            ends = w.endswith(";") and len(w) > 1
            if ends:
                w = w[:-1]
            if sub and w.endswith(")") and w.count("(") < w.count(")"):   # the subshell's closing bracket
                w, sub, ends = w[:-1], sub - 1, True
                if not w:
                    close()
                    continue
            cur.append(w)
            if _ARRAY.match(w) and not (w.endswith(")") and len(w) > w.index("(") + 1):
                in_array = True
            elif ends:
                close()
        if not in_array:
            close()
    close()
    return commands


def trainer_command(commands: list[list[str]], is_entry) -> tuple[list[str] | None, list[list[str]]]:
    """``(the first command with a word for which is_entry(word) holds, the other commands)``;
    ``(None, commands)`` when none has one."""
    at = next((k for k, c in enumerate(commands) if any(is_entry(w) for w in c)), None)
    if at is None:
        return None, commands
    return commands[at], commands[:at] + commands[at + 1:]


#: What a launch script's other commands became: one note (``(other commands)``).
OTHER_COMMANDS = "(other commands)"


def other_commands_note(others: list[list[str]], trainer: str, launcher: list[str] | None = None) -> Note | None:
    """One ``ignored`` note naming the script's other commands (by their first words), which are not
    read: only the trainer's command is the run's; ``launcher``: the words before the trainer in its
    own command (``ray job submit --address ... --``), not read either."""
    launcher = [w for w in (launcher or []) if not _ASSIGN.match(w)]
    while launcher and (launcher[-1] in ("--", "-u", "-m") or launcher[-1].rsplit("/", 1)[-1].startswith("python")):
        launcher = launcher[:-1]
    if not others and not launcher:
        return None
    heads = []
    for c in others:
        h = c[0] if _ASSIGN.match(c[0]) else c[0].rsplit("/", 1)[-1]
        if _ASSIGN.match(h):   # ``NAME=$(command ...)``: named by the variable
            h = h.partition("=")[0] + "=..."
        if h in ("ray", "python", "python3", "pip", "git", "docker") and len(c) > 1:
            h += " " + c[1]
        if h not in heads:
            heads.append(h)
    count = f"{len(others)} other command{'' if len(others) == 1 else 's'} of the script" if others else ""
    launch = f"the launcher before the trainer ({' '.join(launcher[:3])} ...)" if launcher else ""
    return Note(OTHER_COMMANDS, ", ".join(heads) or "-", f"not read: {' and '.join(x for x in (count, launch) if x)}; "
                f"only the trainer's command ({trainer}) is read", "ignored")


def default_lengths(max_response: float, r: Reader) -> LogNormal:
    """Answer lengths assumed before calibration: a lognormal whose median is a quarter of the
    limit, sigma 1.0, truncated at the limit."""
    mu = math.log(max(1.0, max_response / 4.0))
    r.note("(answer lengths)", "-", f"lengths = LogNormal(mu={mu:.3f}, sigma=1.0, max_tokens={max_response:g}): "
           "median a quarter of the limit (assumed; calibrate from response_length metrics)", "assumed")
    return LogNormal(mu=mu, sigma=1.0, max_tokens=float(max_response))


def build(r: Reader, *, framework: str, source: str, prompts: int, group: int, max_response: float,
          pipeline: Synchronous | OneStepAsync | OffPolicy | FullyAsync, layout: Layout, slots: int,
          model: str | None, prompt_tokens: float | None = None, steps: int | None = None, gpu: str | None = None,
          engine: str = "vllm", gpu_memory_utilization: Any = None, memory_option: str | None = None,
          engine_option: str | None = None, train_backend: str | None = None, sync_every: int = 1,
          steps_per_logged_step: int = 1, fully_async: Any = None,
          train_options: dict[str, tuple[str, Any]] | None = None,
          deployment_names: dict[str, str] | None = None) -> ImportedConfig:
    """The scenario of an import, with the assumptions every framework shares noted. ``train_options``
    maps a config option to the deployment's training option it sets and its value (``{option:
    (name, value)}``), each noted as read when there is a deployment, as ignored otherwise;
    ``deployment_names`` names the deployment's arguments in its errors as the config's options
    (``{"rollout_tp": "actor_rollout_ref.rollout.tensor_model_parallel_size"}``; the memory fraction is
    ``memory_option``)."""
    batch = prompts * group
    if batch > 2**24:
        raise invalid("batch_size", f"prompts per step x group size must be at most 16777216 samples, got "
                      f"{prompts} x {group} = {batch}")
    sc_kw: dict[str, Any] = dict(batch_size=batch, group_size=group, rollout_slots=max(1, min(slots, 2**24)),
                                 pipeline=pipeline, lengths=default_lengths(max_response, r), sync_every=sync_every)
    full = layout.engines * layout.slots_per_engine
    r.note("(rollout slots)", "-", f"rollout_slots = {sc_kw['rollout_slots']} (" + (
        f"{layout.engines} engines x {layout.slots_per_engine} sequences)" if sc_kw["rollout_slots"] == full else
        f"of {layout.engines} engines x {layout.slots_per_engine} = {full} sequences: the framework's concurrency "
        "cap, noted above)"), "read")
    r.note("(decode speed)", "-", "decode_tokens_per_s = 30.0 per sequence (assumed; calibrate from generation time)",
           "assumed")
    r.note("(training cost)", "-", "train_step_s = 60.0, train_s_per_token = 0 (assumed; calibrate from update phases)",
           "assumed")
    if prompt_tokens is not None:
        sc_kw["prompt_tokens"] = float(prompt_tokens)
    opts = train_options or {}
    names = {**({"gpu_memory_utilization": memory_option} if memory_option else {}), **(deployment_names or {})}
    try:
        deployment = _deployment(r, model, gpu, layout, engine, gpu_memory_utilization, train_backend,
                                 {name: value for name, value in opts.values()})
    except ScenarioError as e:  # the deployment's argument names, as the config's options
        if not names:
            raise
        words = re.compile("|".join(rf"(?<![\w.-]){re.escape(k)}(?![\w])" for k in sorted(names, key=len, reverse=True)))
        raise ScenarioError(words.sub(lambda m: names[m.group(0)], str(e))) from None
    # the training layout, derived once: the deployment's training model and the weight sync both take it
    par = train_layout(layout, train_backend, opts, None if deployment is None else deployment.spec)
    sync = sync_cluster(model, layout, r, train_backend, par)
    if sync is not None:
        from rollsim.sync import estimate

        est = estimate(sync).total_s
        sc_kw["weight_sync_s"] = float(est)
        r.note("(weight sync)", "-", f"weight_sync_s = {est:.3g} s (rollsim.sync estimate for the layout, ideal "
               "software; calibrate from update_weights time)", "assumed")
    else:
        r.note("(weight sync)", "-", "weight_sync_s = 0 (model not among rollsim.sync.MODELS; calibrate from "
               "update_weights time)", "assumed")
    horizon = 7200.0
    if steps is not None:
        r.note("(horizon)", "-", f"horizon_s = {horizon:g} s (rollsim's default; the config asks for {steps} steps)",
               "assumed")
    sc = Scenario(horizon_s=horizon, **sc_kw)
    for option, (name, value) in opts.items():
        _deployment_option(r, option, value, f"deployment.train_options[{name!r}] = {value} (the deployment's "
                           "training model: a what-if's training GPU change keeps the layout)", gpu, deployment)
    if memory_option is not None and gpu_memory_utilization is not None:
        _deployment_option(r, memory_option, gpu_memory_utilization, "deployment.gpu_memory_utilization = "
                           f"{gpu_memory_utilization:g} (the deployment's KV capacity)", gpu, deployment)
    if engine_option is not None:
        used = getattr(deployment, "engine", "")
        _deployment_option(r, engine_option, engine, f"deployment.engine = {used!r} (the deployment's serving model"
                           + (")" if used == engine.lower() else f"; {engine!r} is not modelled, {used!r} assumed)"),
                           gpu, deployment)
    return ImportedConfig(framework=framework, source=source, scenario=sc, deployment=deployment, sync=sync,
                          notes=tuple(r.notes), layout=layout, prompts_per_step=prompts,
                          max_response_tokens=float(max_response), model=model, train_backend=train_backend,
                          steps_per_logged_step=steps_per_logged_step, fully_async=fully_async)


def _deployment_option(r: Reader, option: str, value: Any, became: str, gpu: str | None, deployment: Any) -> None:
    """The note of an option only the deployment uses (the engine's GPU memory fraction, the engine):
    what it became (``became``, when there is a deployment: built only with an accelerator and a known
    model) or why nothing took it."""
    if deployment is not None:
        r.note(option, value, became, "read")
    elif gpu is None:
        r.note(option, value, "ignored: only the deployment uses it, and there is none without an accelerator "
               "(gpu=, --gpu)", "ignored")
    else:
        r.note(option, value, "ignored: only the deployment uses it, and there is none (model not among "
               "rollsim.hardware.MODELS)", "ignored")


_SYNC_NAMES = {
    "qwen3-4b": "qwen3-4b",
    "qwen3-30b-a3b": "qwen3-30b-a3b",
    "qwen3-235b-a22b": "qwen3-235b-a22b",
    "deepseek-v3": "deepseek-v3",
    "deepseek-r1": "deepseek-v3",
    "kimi-k2": "kimi-k2",
    "glm-4.5-air": "glm-4.5-air",
}


#: The hardware training model's Megatron options that are parallel sizes (:func:`rollsim.hardware.training.parallel_layout`).
_LAYOUT_OPTIONS = ("tensor_parallel", "pipeline_parallel", "context_parallel", "expert_parallel", "expert_tensor_parallel")


def train_layout(layout: Layout, train_backend: str | None, train_options: dict[str, tuple[str, Any]] | None,
                 spec: Any = None) -> Any:
    """The training job's parallel layout on the config's training GPUs
    (:class:`rollsim.hardware.training.ParallelLayout`, checked by
    :func:`rollsim.hardware.training.parallel_layout` as Megatron-Core checks it): with the Megatron
    backend its sizes (``train_options``, as ``build`` takes them), else None (FSDP over every training
    GPU). ``spec`` (the deployment's model, when there is one) adds the model's checks (pipeline stages
    at most its layers, expert parallel dividing its experts). Derived once, for the deployment's
    training model and the weight-sync cluster (:func:`sync_cluster`); a layout the training GPUs
    cannot hold is refused, naming the config's options."""
    if train_backend != "megatron":
        return None
    from rollsim.hardware.training import parallel_layout

    opts = {o: (n, v) for o, (n, v) in (train_options or {}).items() if n in _LAYOUT_OPTIONS}
    gpus = max(1, layout.train_gpus)
    try:
        return parallel_layout(gpus, **{n: int(v) for n, v in opts.values()}, model=spec)
    except ScenarioError as e:
        raise invalid(", ".join(opts), f"the training layout ({', '.join(f'{n} {v}' for n, v in opts.values())} on "
                      f"{count(gpus, 'training GPU')}) is refused: {e}") from None


def sync_cluster(model: str | None, layout: Layout, r: Reader, train_backend: str | None = None,
                 par: Any = None):
    """A :class:`rollsim.sync.Cluster` for a model named in :data:`rollsim.sync.MODELS` (matched on the
    last path component, case-insensitive), else None. The training side is the config's: FSDP over
    every training GPU, or with the Megatron backend its parallel layout ``par`` (:func:`train_layout`:
    ``dp = train_gpus / (tp x cp x pp)`` replicas, which hold whole copies of their shard; the
    distributed optimizer shards only the optimizer state)."""
    if not model:
        return None
    leaf = str(model).rstrip("/").rsplit("/", 1)[-1].lower()
    key = next((v for k, v in _SYNC_NAMES.items() if leaf == k or leaf.startswith(k + "-")), None)
    if key is None:
        return None
    from rollsim.sync import MODELS, Cluster, Hardware, InferLayout, TrainLayout

    topology = "colocated" if layout.colocated else "broadcast"
    gpus = max(1, layout.train_gpus)
    if train_backend == "megatron" and par is not None:
        sizes = {k: v for k, v in (("tp", par.tensor_parallel), ("pp", par.pipeline_parallel),
                                   ("cp", par.context_parallel), ("ep", par.expert_parallel)) if v > 1}
        train = TrainLayout(dp=par.data_parallel, fsdp=False, **sizes)
        words = "train " + " ".join([f"{k.upper()}{v}" for k, v in sizes.items()]
                                    + [f"dp={par.data_parallel} Megatron"])
    else:
        train = TrainLayout(dp=gpus, fsdp=True)
        words = f"train dp={gpus} FSDP"
    cl = Cluster(model=MODELS[key], train=train,
                 infer=InferLayout(instances=layout.engines, tp=max(1, layout.rollout_tp)),
                 hardware=Hardware(colocated=layout.colocated), topology=topology)
    r.note("(sync cluster)", model, f"sync = Cluster(model={key!r}, {words}, "
           f"{layout.engines} engines x TP{layout.rollout_tp}, topology={topology!r}, H100-class links)", "assumed")
    return cl


def _deployment(r: Reader, model: str | None, gpu: str | None, layout: Layout, engine: str, mem: Any,
                train_backend: str | None = None, train_options: dict[str, Any] | None = None):
    """A :class:`rollsim.hardware.Deployment` when the accelerator is given and the model is known to
    :data:`rollsim.hardware.MODELS` (matched on the path's last component), else None with a note."""
    if gpu is None:
        r.note("(deployment)", "-", "deployment = None (the config does not name the accelerator; pass gpu=, "
               "--gpu on the command line)", "assumed")
        return None
    from rollsim.hardware import MODELS, Deployment

    leaf = str(model or "").rstrip("/").rsplit("/", 1)[-1].lower()
    names = {k.lower(): k for k in MODELS}
    if leaf not in names:
        r.note("(deployment)", str(model), "deployment = None (model not among rollsim.hardware.MODELS)", "assumed")
        return None
    eng = engine.lower() if engine.lower() in ("vllm", "sglang") else "vllm"
    mem_ok = mem if isinstance(mem, (int, float)) and not isinstance(mem, bool) and 0 < mem <= 1 else None
    rollout = max(layout.rollout_tp, (layout.rollout_gpus // layout.rollout_tp) * layout.rollout_tp)
    d = Deployment(model=names[leaf], gpu=gpu, rollout_gpus=rollout, rollout_tp=layout.rollout_tp,
                   train_gpus=rollout if layout.colocated else layout.train_gpus, engine=eng,
                   gpu_memory_utilization=mem_ok, max_num_seqs=layout.slots_per_engine, colocated=layout.colocated,
                   train_backend=train_backend or "fsdp2", train_options=dict(train_options or {}))
    r.note("(deployment)", gpu, f"deployment = Deployment({names[leaf]!r}, {gpu!r}, {rollout} rollout GPUs x TP"
           f"{layout.rollout_tp}, {d.train_gpus} training GPUs, {eng}{', colocated' if layout.colocated else ''}): "
           "hardware-model speeds, deployment.scenario(...)", "read")
    return d
