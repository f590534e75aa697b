"""A new user's tryout: a typo in a config *file* is reported like one in an override, an option noted
"ignored" is really not used (and one that is used says what it became), the engine's memory fraction
is checked where it is read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]

from rollsim import ScenarioError, configs
from rollsim.cli import main
from rollsim.configs import EXAMPLES

EXAMPLE_CONFIGS = ("verl_grpo.yaml", "verl_fully_async.sh", "areal_grpo.yaml", "slime_async.sh", "openrlhf_ppo.sh")


def _notes(imp, option):
    return [n for n in imp.notes if n.option == option]


def _yaml(tmp_path: Path, name: str, edit) -> Path:
    tree = yaml.safe_load((EXAMPLES / name).read_text())
    edit(tree)
    p = tmp_path / name
    p.write_text(yaml.safe_dump(tree))
    return p


# ------------------------------------------------------------------- 1. typos in a config file

@pytest.mark.parametrize("section, typo, meant", [
    ("data", "max_response_lenght", "data.max_response_length"),
    ("data", "train_bach_size", "data.train_batch_size"),
])
def test_a_typo_in_a_verl_yaml_file_is_an_unknown_option_like_an_override(tmp_path, capsys, section, typo, meant):
    p = _yaml(tmp_path, "verl_grpo.yaml", lambda t: t[section].update({typo: 64}))
    imp = configs.load(p)
    (n,) = _notes(imp, f"{section}.{typo}")
    assert n.kind == "ignored" and n.became.startswith(f"ignored: unknown option (did you mean {meant!r}")
    assert imp.warnings() == [f"rollsim: warning: {section}.{typo}=64: {n.became[len('ignored: '):]}"]
    # the same words as the override path's
    via_override = configs.load(EXAMPLES / "verl_grpo.yaml", overrides=[f"{section}.{typo}=64"])
    assert via_override.warnings() == imp.warnings()
    assert imp.scenario == configs.load(EXAMPLES / "verl_grpo.yaml").scenario   # the typo changed nothing
    assert main(["import", str(p), "--toml"]) == 0
    assert capsys.readouterr().err == imp.warnings()[0] + "\n"


def test_a_typo_in_a_yaml_file_a_verl_script_names_is_reported(tmp_path):
    (tmp_path / "mine.yaml").write_text("data:\n  max_response_lenght: 4096\nmy_recipe:\n  knob: 3\n")
    p = tmp_path / "run.sh"
    p.write_text("python3 -m verl.trainer.main_ppo --config-path . --config-name mine data.train_batch_size=8 "
                 "my_recipe.knob=4\n")
    imp = configs.load(p)
    # the file's typo is reported; its own section (a recipe's) and the override of it are accepted
    assert [n.option for n in imp.unknown_options] == ["data.max_response_lenght"]
    assert _notes(imp, "my_recipe.knob")[0].became == "ignored: not modelled by rollsim"


def test_the_examples_have_no_unknown_option():
    for name in EXAMPLE_CONFIGS:
        assert configs.load(EXAMPLES / name).warnings() == [], name


# ---------------------------------------------------- 2. gpu_memory_utilization, "ignored" notes

MEM = "actor_rollout_ref.rollout.gpu_memory_utilization"


@pytest.mark.parametrize("value", [85, 0, -0.5, 1.5])
def test_verl_gpu_memory_utilization_out_of_range_is_refused(tmp_path, value):
    p = _yaml(tmp_path, "verl_grpo.yaml", lambda t: t["actor_rollout_ref"]["rollout"].update(gpu_memory_utilization=value))
    for gpu in (None, "H100"):
        with pytest.raises(ScenarioError, match=re.escape(f"{MEM}: must be in (0, 1] (a fraction of each GPU's memory, "
                                                          f"not a percentage), got {value!r}")):
            configs.load(p, gpu=gpu)


def test_verl_gpu_memory_utilization_says_what_it_became():
    with_gpu = configs.load(EXAMPLES / "verl_grpo.yaml", gpu="H100")
    (n,) = _notes(with_gpu, MEM)
    assert (n.kind, n.value, n.became) == ("read", "0.6", "deployment.gpu_memory_utilization = 0.6 (the deployment's "
                                                          "KV capacity)")
    assert with_gpu.deployment.gpu_memory_utilization == 0.6
    other = configs.load(EXAMPLES / "verl_grpo.yaml", gpu="H100", overrides=[f"{MEM}=0.85"])
    assert other.deployment.gpu_memory_utilization == 0.85 and other.deployment != with_gpu.deployment
    (n,) = _notes(configs.load(EXAMPLES / "verl_grpo.yaml"), MEM)
    assert n.kind == "ignored" and "there is none without an accelerator (gpu=, --gpu)" in n.became
    (n,) = _notes(configs.load(EXAMPLES / "verl_grpo.yaml", gpu="H100", overrides=["actor_rollout_ref.model.path=a/b"]),
                  MEM)
    assert n.kind == "ignored" and "model not among rollsim.hardware.MODELS" in n.became


def test_verl_rollout_name_says_what_the_deployment_took():
    (n,) = _notes(configs.load(EXAMPLES / "verl_grpo.yaml", gpu="H100"), "actor_rollout_ref.rollout.name")
    assert (n.kind, n.became) == ("read", "deployment.engine = 'vllm' (the deployment's serving model)")
    imp = configs.load(EXAMPLES / "verl_grpo.yaml", gpu="H100", overrides=["actor_rollout_ref.rollout.name=sglang"])
    assert imp.deployment.engine == "sglang"
    (n,) = _notes(configs.load(EXAMPLES / "verl_grpo.yaml", gpu="H100", overrides=["actor_rollout_ref.rollout.name=hf"]),
                  "actor_rollout_ref.rollout.name")
    assert n.became.endswith("'hf' is not modelled, 'vllm' assumed)")


def _without(tmp_path: Path, name: str, option: str) -> Path:
    """The example with one option removed (a YAML key, a ``key=value`` override, an ``--argument [value]``)."""
    text = (EXAMPLES / name).read_text()
    if name.endswith(".yaml"):
        tree = yaml.safe_load(text)
        *parents, leaf = option.split(".")
        node = tree
        for part in parents:
            node = node[part]
        del node[leaf]
        out = yaml.safe_dump(tree)
    elif option.startswith("--"):
        out, k = re.subn(rf"(?<!\S){re.escape(option)}(?:[ =](?!-)[^\s\\]+)?(?=\s|$)", "", text)
        assert k == 1, option
    else:
        out, k = re.subn(rf"(?<!\S){re.escape(option)}=\S+", "", text)
        assert k == 1, option
    p = tmp_path / name
    p.write_text(out)
    return p


@pytest.mark.parametrize("name", EXAMPLE_CONFIGS)
@pytest.mark.parametrize("gpu", [None, "H100"])
def test_every_option_noted_ignored_changes_nothing_when_removed(tmp_path, name, gpu):
    imp = configs.load(EXAMPLES / name, gpu=gpu)
    ignored = [n.option for n in imp.notes if n.kind == "ignored" and not n.option.startswith("(")]
    assert len(ignored) >= (0 if name == "openrlhf_ppo.sh" else 2), ignored
    for option in ignored:
        other = configs.load(_without(tmp_path, name, option), gpu=gpu)
        assert not [n for n in _notes(other, option) if n.kind in ("read", "ignored")], option
        assert (other.scenario, other.deployment, other.sync) == (imp.scenario, imp.deployment, imp.sync), option
    # and the options noted "read" that only the deployment uses do change it
    if name == "verl_grpo.yaml" and gpu:
        other = configs.load(_without(tmp_path, name, MEM), gpu=gpu)
        assert other.deployment != imp.deployment and other.deployment.gpu_memory_utilization is None


# ---------------------------------------------------------------- 4. whatif --rollout-gpus bound

def test_whatif_rollout_gpus_bound_is_the_configs_gpus(capsys):
    import rollsim

    cal = rollsim.calibrate(EXAMPLES / "verl_grpo_metrics.csv", configs.load(EXAMPLES / "verl_grpo.yaml"), bootstrap=0)
    assert cal.layout.colocated and cal.layout.rollout_gpus == 16
    for r in (16, 20):
        with pytest.raises(ScenarioError, match=re.escape(f"rollout_gpus: must be in [1, 15] (the config's 16 GPUs, "
                                                          f"at least 1 left for training), got {r}")):
            rollsim.whatif(cal, [{"pipeline": "fully-async", "rollout_gpus": r}], draws=0)
    # 15 is allowed: one GPU trains
    with pytest.warns(rollsim.GenerationOutrunsTrainingWarning):   # 15 rollout GPUs for 1 trainer
        df = rollsim.whatif(cal, [{"pipeline": "fully-async", "rollout_gpus": 15}], draws=0, steps=4)
    assert df.height == 2 and df["variant"][1] == "fully-async, rollout_gpus=15"
    argv = ["whatif", "--config", str(EXAMPLES / "verl_grpo.yaml"), "--metrics", str(EXAMPLES / "verl_grpo_metrics.csv"),
            "--pipeline", "fully-async", "--rollout-gpus", "20", "--bootstrap", "0", "--draws", "0"]
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines()[-1] == ("rollsim: error: --rollout-gpus: must be in [1, 15] (the "
                                                        "config's 16 GPUs, at least 1 left for training), got 20")


# ------------------------------------------------------- 5. livelock warnings in sweeps and split

def test_sweep_warns_once_naming_the_points_that_livelock():
    import rollsim
    from rollsim import FullyAsync, Scenario, StalenessCapLivelockWarning

    sc = Scenario(horizon_s=600.0, batch_size=64, rollout_slots=128, pipeline=FullyAsync(max_staleness=3), sync_every=4)
    with pytest.warns(StalenessCapLivelockWarning) as got:
        df = rollsim.sweep(sc, {"pipeline.max_staleness": [0, 1, 2, 3]}, progress=False)
    (w,) = [x for x in got if x.category is StalenessCapLivelockWarning]
    msg = str(w.message)
    assert msg.startswith("3 of 4 sweep scenarios cannot train past their first steps (a staleness cap below "
                          "sync_every - 1): pipeline.max_staleness=0; pipeline.max_staleness=1; "
                          "pipeline.max_staleness=2. The first: pipeline.max_staleness = 0 is below sync_every - 1 = 3")
    assert w.filename == __file__                 # points at the caller
    # what it says is true: those stop after max_staleness + 1 steps, the cap of 3 trains on
    steps = dict(zip(df["pipeline.max_staleness"], df["steps"]))
    assert [steps[c] for c in range(4)] == [1, 2, 3, 6]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", StalenessCapLivelockWarning)   # none when every cap trains
        rollsim.sweep(sc, {"pipeline.max_staleness": [3, 4]}, progress=False)


def test_sweep_warning_names_at_most_five_points():
    import rollsim
    from rollsim import FullyAsync, Scenario, StalenessCapLivelockWarning

    sc = Scenario(horizon_s=60.0, batch_size=64, rollout_slots=64, pipeline=FullyAsync(max_staleness=0))
    with pytest.warns(StalenessCapLivelockWarning, match=r"^7 of 7 sweep scenarios .*sync_every=8; sync_every=9 and "
                                                         r"2 more\. The first: pipeline.max_staleness = 0 is below "
                                                         r"sync_every - 1 = 4"):
        rollsim.sweep(sc, {"sync_every": [5, 6, 7, 8, 9, 10, 11]}, progress=False)


@pytest.mark.filterwarnings("default::rollsim.StalenessCapLivelockWarning")  # said on stderr, checked below
def test_sweep_command_and_split_say_it(tmp_path, capsys):
    sweep = tmp_path / "sweep.toml"
    sweep.write_text("[base]\nhorizon_s = 300.0\nsync_every = 4\n[base.pipeline]\nkind = 'fully_async'\n"
                     "max_staleness = 0\n[grid]\nrollout_slots = [64, 128]\n")
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "sw"), "--no-progress"]) == 0
    err = capsys.readouterr().err.splitlines()
    said = [ln for ln in err if "cannot train past their first steps" in ln]
    assert len(said) == 1 and said[0].startswith("rollsim sweep: warning: 2 of 2 sweep scenarios cannot train past "
                                                 "their first steps (a staleness cap below sync_every - 1): "
                                                 "rollout_slots=64; rollout_slots=128. The first:")
    argv = ["split", "--gpus", "4", "--pipeline", "fully-async", "--max-staleness", "0", "--sync-every", "4",
            "--gpu-s-per-token", "0.001", "--horizon-s", "300"]
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert cap.err.splitlines() == [
        "rollsim: warning: 3 of 3 splits (rollout+training GPUs: 1+3, 2+2, 3+1) cannot train past their first steps: "
        "--max-staleness = 0 is below --sync-every - 1 = 3: staleness counts policy versions (training steps) and the "
        "rollout loads new weights only every 4 steps (--sync-every = 4), so the k-th step after a load can train only "
        "samples at least k - 1 versions old; after 1 step every finished sample is over the cap and dropped, the next "
        "weights never reach the rollout and training stops for good (a livelock, whatever the horizon). The smallest "
        "--max-staleness that trains is 3 (or --sync-every <= 1)"]
    rows = cap.out.splitlines()[2:5]
    assert len(rows) == 3 and all("excluded: " in r for r in rows)
    # the Python gpu_split says it too, in its own names; a cap that trains says nothing
    from rollsim import FullyAsync, Scenario, StalenessCapLivelockWarning, resources

    sc = Scenario(horizon_s=60.0, pipeline=FullyAsync(max_staleness=1), sync_every=4)
    kw = dict(gpus_per_instance=1, slots_per_instance=64, gpu_s_per_token=0.001)
    with pytest.warns(StalenessCapLivelockWarning, match=r"^2 of 2 splits \(rollout\+training GPUs: 1\+2, 2\+1\) "
                                                         r"cannot train past their first steps: pipeline.max_staleness "
                                                         r"= 1 is below sync_every - 1 = 3"):
        resources.gpu_split(sc, 3, **kw)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", StalenessCapLivelockWarning)
        resources.gpu_split(sc.replace(sync_every=2), 3, **kw)


# ------------------------------------------------------ 3. calibration plausibility (milliseconds)

def _ms_metrics(tmp_path: Path, scale: float = 1000.0) -> Path:
    import polars as pl

    df = pl.read_csv(EXAMPLES / "verl_grpo_metrics.csv")
    timing = [c for c in df.columns if c.startswith("timing_s/")]
    assert len(timing) == 4
    p = tmp_path / "ms.csv"
    df.with_columns([pl.col(c) * scale for c in timing]).write_csv(p)
    return p


def test_calibration_on_milliseconds_warns_and_notes_it(tmp_path, capsys):
    import rollsim
    from rollsim import CalibrationPlausibilityWarning
    from rollsim.calibration import IMPLAUSIBLE, PLAUSIBLE

    imp = configs.load(EXAMPLES / "verl_grpo.yaml")
    good = rollsim.calibrate(EXAMPLES / "verl_grpo_metrics.csv", imp, bootstrap=0)   # no warning (errors here)
    assert not any(n.startswith(IMPLAUSIBLE) for n in good.notes)
    with pytest.warns(CalibrationPlausibilityWarning) as got:
        cal = rollsim.calibrate(_ms_metrics(tmp_path), imp, bootstrap=0)
    # the fit itself is the seconds' fit with every time x1000 (and matches the rows as well)
    assert cal.values["decode_tokens_per_s"] == pytest.approx(good.values["decode_tokens_per_s"] / 1000, rel=1e-6)
    assert abs(float(cal.residuals["step_error"].mean())) < 1e-3
    (note,) = [n for n in cal.notes if n.startswith(IMPLAUSIBLE)]
    assert [str(w.message) for w in got if w.category is CalibrationPlausibilityWarning] == [note]
    assert got[0].filename == __file__
    lo, hi, _ = PLAUSIBLE["decode_tokens_per_s"]
    assert not lo <= cal.values["decode_tokens_per_s"] <= hi
    assert note.startswith(f"{IMPLAUSIBLE} decode_tokens_per_s = {cal.values['decode_tokens_per_s']:.3g} tokens/s per "
                           "sequence (plausible: [1, 5000]); weight_sync_s_per_sync = ")
    assert "step_s = 1.74e+05 s per step (measured mean) (plausible: at most 86400)" in note
    assert note.endswith("Timings in milliseconds? Every fitted time is about 1000x a plausible one: rollsim reads "
                         "seconds (divide the timing columns by 1000).")
    # rollsim calibrate says it once, as a warning
    argv = ["calibrate", "--config", str(EXAMPLES / "verl_grpo.yaml"), "--metrics", str(_ms_metrics(tmp_path)),
            "--bootstrap", "0"]
    assert main(argv) == 0
    assert capsys.readouterr().err.splitlines() == [f"rollsim: warning: {note}"]


def test_plausibility_without_the_millisecond_hint():
    from rollsim import CalibrationPlausibilityWarning
    from rollsim.calibration import plausibility_notes

    v = dict(decode_tokens_per_s=40.0, weight_sync_s=2.0, gen_overhead_s=5.0, train_step_s=10.0, train_s_per_token=0.0)
    import numpy as np

    assert plausibility_notes(v, np.array([100.0, 120.0])) == ()
    # a sync of 2 h in rows of 4 steps (0.5 h per step): per sync, the bound is crossed; 1000x less is fine too
    with pytest.warns(CalibrationPlausibilityWarning):
        (note,) = plausibility_notes(dict(v, weight_sync_s=1800.0), np.array([8000.0]), steps_per_row=4)
    assert "weight_sync_s_per_sync = 7.2e+03 s per sync (plausible: at most 3600)" in note
    assert "Timings in milliseconds?" not in note    # the other values are plausible as they are: not a unit slip
    assert note.endswith("Check the metrics' units and that they are the run the config describes.")
    with pytest.warns(CalibrationPlausibilityWarning, match=r"decode_tokens_per_s = 9e\+03 tokens/s per sequence"):
        plausibility_notes(dict(v, decode_tokens_per_s=9000.0), np.array([100.0]))
    # fit()'s 1e9 (a generation time that does not grow with the tokens: no speed fitted) is not a unit slip
    assert plausibility_notes(dict(v, decode_tokens_per_s=1e9), np.array([100.0])) == ()


@pytest.mark.parametrize("name, option, overrides", [
    ("areal_grpo.yaml", "sglang.mem_fraction_static", []),       # the example sets 0.8
    ("slime_async.sh", "--sglang-mem-fraction-static", ["--sglang-mem-fraction-static", "0.7"]),
    ("openrlhf_ppo.sh", "--vllm.gpu_memory_utilization", ["--vllm.gpu_memory_utilization", "0.5"]),
])
def test_every_frameworks_engine_memory_fraction_reaches_the_deployment(tmp_path, name, option, overrides):
    imp = configs.load(EXAMPLES / name, gpu="H100", overrides=overrides)
    (n,) = _notes(imp, option)
    value = float(n.value)
    assert (n.kind, n.became) == ("read", f"deployment.gpu_memory_utilization = {value:g} (the deployment's KV "
                                          "capacity)")
    assert imp.deployment.gpu_memory_utilization == value
    without = _without(tmp_path, name, option) if not overrides else EXAMPLES / name
    other = configs.load(without, gpu="H100").deployment
    assert other.gpu_memory_utilization is None and other != imp.deployment
    (n,) = _notes(configs.load(EXAMPLES / name, overrides=overrides), option)
    assert n.kind == "ignored"
    bad = [option, "80"] if option.startswith("--") else [f"{option}=80"]
    with pytest.raises(ScenarioError, match=re.escape(f"{option}: must be in (0, 1] (a fraction of each GPU's memory, "
                                                      "not a percentage), got 80")):
        configs.load(EXAMPLES / name, overrides=bad)
