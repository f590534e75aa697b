"""Import a verl, AReaL, slime or OpenRLHF config as a rollsim scenario.

>>> import rollsim.configs as configs
>>> imp = configs.load(configs.EXAMPLES / "verl_grpo.yaml")
>>> imp.scenario.batch_size, imp.scenario.group_size     # 256 prompts x rollout.n 8
(2048, 8)

:func:`load` reads the file (the framework is detected when not given) and returns an
:class:`ImportedConfig`: the scenario, the weight-sync cluster where the model is known, and notes for
every option read (with its unit conversion), every option that matters but was absent (the
framework's default or rollsim's assumption), and every option ignored. Speeds and training costs
that a config cannot give are assumptions: :func:`rollsim.calibrate` fits them on a run's metrics.
"""

from __future__ import annotations

from pathlib import Path

from rollsim.errors import ScenarioError, invalid

from ._common import ImportedConfig, Layout, Note, read_yaml, split_command

__all__ = ["load", "detect", "ImportedConfig", "Layout", "Note", "FRAMEWORKS", "EXAMPLES"]

FRAMEWORKS = ("verl", "areal", "slime", "openrlhf")

#: Example configs shipped with rollsim, one per framework (written for rollsim in each format).
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "configs"


def detect(path: str | Path) -> str:
    """The framework a config file is written for.

    YAML: verl when it has ``actor_rollout_ref`` / ``data`` / ``async_training`` / verl ``defaults``,
    AReaL when it has ``gconfig`` / ``rollout.max_head_offpolicyness`` / ``allocation_mode`` /
    ``rollout.backend``. A script or argument list: slime when it runs ``train.py`` /
    ``train_async.py`` or uses ``--rollout-batch-size``; OpenRLHF when it runs
    ``openrlhf.cli.train_ppo_ray`` or uses dotted ``--rollout.batch_size``-style names; verl when it
    runs a verl entry module or has ``key=value`` overrides.

    Raises
    ------
    ScenarioError
        ``framework: cannot tell ...`` naming the allowed frameworks; ``config: ...`` for a table
        (CSV, parquet, JSON lines: a run's metrics, which :func:`rollsim.calibrate` reads).
    """
    p = Path(path)
    if p.suffix.lower() in (".csv", ".parquet", ".pq", ".jsonl", ".ndjson"):
        raise invalid("config", f"{p.name} is a {p.suffix} file, a table, not "
                      "a config (a run's per-step metrics go to rollsim.calibrate, on the command line rollsim "
                      "calibrate --config CONFIG --metrics FILE); give the run's config (verl YAML or launch "
                      "script, AReaL YAML, slime or OpenRLHF launch script)")
    if p.suffix in (".yaml", ".yml"):
        tree = read_yaml(p)
        if any(k in tree for k in ("gconfig", "allocation_mode")) or (
                isinstance(tree.get("rollout"), dict) and ({"max_head_offpolicyness", "backend", "consumer_batch_size"}
                                                           & set(tree["rollout"]))):
            return "areal"
        if any(k in tree for k in ("actor_rollout_ref", "data", "async_training", "trainer", "algorithm")):
            return "verl"
    else:
        words = split_command(p.read_text())
        text = " ".join(words)
        if "openrlhf" in text or any(w.startswith("--rollout.") or w.startswith("--actor.") for w in words):
            return "openrlhf"
        if "verl." in text or "verl/" in text:
            return "verl"
        if any(w.rsplit("/", 1)[-1] in ("train.py", "train_async.py") for w in words) or "--rollout-batch-size" in words:
            return "slime"
        if any("=" in w and not w.startswith("-") and "." in w.partition("=")[0] for w in words):
            return "verl"
    raise invalid("framework", f"cannot tell which framework {p.name} is for; pass framework= one of "
                  f"{', '.join(FRAMEWORKS)}")


def load(path: str | Path, framework: str | None = None, overrides: list[str] | tuple[str, ...] = (), *,
         gpu: str | None = None) -> ImportedConfig:
    """Reads a framework's config into a scenario.

    Parameters
    ----------
    path : str or Path
        verl: a Hydra YAML (main PPO trainer, ``one_step_off_policy`` or ``fully_async_policy``
        recipe) or a launch script with dotted overrides; AReaL: a YAML experiment config; slime: a
        launch script running ``train.py`` / ``train_async.py`` (or its argument list); OpenRLHF: a
        launch script running ``openrlhf.cli.train_ppo_ray`` (or its arguments).
    framework : {"verl", "areal", "slime", "openrlhf"}, optional
        Detected from the file when not given (:func:`detect`).
    overrides : list of str
        Options applied after the file's: ``key=value`` for verl and AReaL, ``--name value`` for
        slime and OpenRLHF.
    gpu : str, optional
        The accelerator (:data:`rollsim.hardware.ACCELERATORS`; configs do not name it): builds
        ``.deployment`` (:class:`rollsim.hardware.Deployment`) when the model is known.

    Returns
    -------
    ImportedConfig
        ``.scenario``, ``.deployment`` (None without ``gpu``: see ``.notes``), ``.sync``, ``.notes``, ``.layout``.

    Raises
    ------
    ScenarioError
        A missing file, an unknown framework, or a bad option (the message names the option and the
        allowed range).
    """
    p = Path(path)
    if not p.is_file():
        raise invalid("config", f"no such file: {p}")
    fw = framework.lower() if isinstance(framework, str) else framework
    if fw is None:
        fw = detect(p)
    if fw not in FRAMEWORKS:
        raise invalid("framework", f"must be one of {', '.join(FRAMEWORKS)}, got {framework!r}")
    if framework is not None:  # read as asked, but a file that is plainly another framework's is said to be
        try:
            looks = detect(p)
        except (ScenarioError, OSError, UnicodeDecodeError):
            looks = fw
        if looks != fw:
            import warnings

            warnings.warn(f"framework: {p.name} looks like a config for {looks}, read as {fw} as asked: its {looks} "
                          f"options are unknown to {fw} and ignored, and {fw}'s defaults stand for them; leave out "
                          f"framework= (--framework) to read it as {looks}", UserWarning, stacklevel=2)
    if fw == "verl":
        from . import verl as mod
    elif fw == "areal":
        from . import areal as mod  # type: ignore[no-redef]
    elif fw == "slime":
        from . import slime as mod  # type: ignore[no-redef]
    else:
        from . import openrlhf as mod  # type: ignore[no-redef]
    return mod.load(p, overrides, gpu)
