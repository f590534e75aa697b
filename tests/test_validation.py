"""Validation against published measurements: verl one_step_off and fully_async
(verl docs, advance/one_step_off.md and advance/fully_async.md), the chapter's 600 s exercise, AReaL's
eta shape (arXiv 2505.24298) and the typical speedup bands that those runs span."""

import math

import polars as pl
import pytest

from rollsim import ScenarioError, cli, validation
from rollsim import simulate
from rollsim.resources import roofline_decode, run_metrics

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture(scope="module")
def table() -> dict[str, dict]:
    df = validation.validate()
    return {r["case"]: r for r in df.iter_rows(named=True)}


#: Cases predicted within the 15 % target.
WITHIN = ("chapter", "verl_one_step_fsdp2", "verl_one_step_megatron")

#: What the model predicts today for every case (README "Validation" table); a change of the model
#: that moves one by more than 2 % must update the README.
PREDICTED = {"chapter": 1.957, "verl_one_step_fsdp2": 1.227, "verl_one_step_megatron": 1.379,
             "verl_fully_async_32": 1.645, "verl_fully_async_64": 2.272, "verl_fully_async_128": 3.025,
             "verl_staleness_0": 116.96, "verl_staleness_0_1": 37.95, "verl_staleness_0_3": 13.56,
             "verl_staleness_0_5": 0.32}


@pytest.mark.parametrize("case", WITHIN)
def test_predictions_within_target(table, case):
    r = table[case]
    assert abs(r["predicted"] / r["measured"] - 1) <= validation.TARGET
    assert r["within_target"]


def test_every_miss_is_explained(table):
    for name, r in table.items():
        if not r["within_target"]:
            assert r["note"].startswith(("miss:", "shape holds")), name


def test_predictions_match_the_readme(table):
    assert set(table) == set(PREDICTED)
    for name, value in PREDICTED.items():
        assert table[name]["predicted"] == pytest.approx(value, rel=0.02, abs=0.5), name
    with open("README.md") as f:
        readme = f.read()
    for name in WITHIN:
        assert f"{table[name]['predicted']:.2f}" in readme, name


def test_typical_bands(table):
    """One-step overlap 1.2-1.4x, fully async with partial rollout 1.7-2.8x
    (the band the published verl and AReaL runs span)."""
    for name in ("verl_one_step_fsdp2", "verl_one_step_megatron"):
        assert 1.2 <= table[name]["predicted"] <= 1.4, name
    assert 1.7 <= table["verl_fully_async_64"]["predicted"] <= 2.8
    assert table["verl_fully_async_64"]["in_band"]
    assert not table["verl_fully_async_32"]["in_band"]   # documented: the 32-GPU length fit starves the trainer
    assert not table["verl_fully_async_128"]["in_band"]  # documented: no fixed per-sync wait in the model


def test_length_scale_fits_the_synchronous_generation_time(table):
    """The stored fitted means reproduce each published synchronous generation time within 3 %."""
    for name, r in table.items():
        if r["measured_sync_gen_s"] is not None:
            assert r["sync_generation_s"] == pytest.approx(r["measured_sync_gen_s"], rel=0.03), name


def test_fit_mean_tokens_recovers_a_known_mean():
    """Fitting to the generation time of a known mean gives that mean back (within the tolerance
    of the noisy steady-state estimate)."""
    c = validation.cases_by_name()["verl_one_step_megatron"]
    gen = run_metrics(simulate(c.sync), warmup_steps=validation.WARMUP_STEPS)["generation_s"]
    mean = validation.fit_mean_tokens(c.sync, gen, rel_tol=0.002)
    assert mean == pytest.approx(1165.2, rel=0.03)


def test_predictions_are_the_steady_state_of_run_metrics():
    """A user reproduces a prediction with run_metrics(res, warmup_steps=2) on validation.published."""

    sync, run = validation.published("verl_one_step_fsdp2")
    s = run_metrics(simulate(sync), warmup_steps=validation.WARMUP_STEPS)
    r = run_metrics(simulate(run), warmup_steps=validation.WARMUP_STEPS)
    assert s["step_time_s"] / r["step_time_s"] == pytest.approx(PREDICTED["verl_one_step_fsdp2"], rel=1e-3)
    assert r["trainer_wait_s"] == pytest.approx(validation.validate(["verl_one_step_fsdp2"])["wait_s"][0])
    # counting the pipeline's fill too changes the number a little
    assert run_metrics(simulate(run))["step_time_s"] != pytest.approx(r["step_time_s"], rel=1e-4)


def test_staleness_ablation_shape(table):
    """verl 128 GPUs: the trainer's wait falls as staleness_threshold grows (128 -> 58 -> 39 -> 33 s);
    the model's falls too (117 -> 38 -> 14 -> 0.3 s: from 0 to 0.5 117 s against 95 s), and what it
    leaves out grows to the ~33 s per-sync wait measured where the rollout keeps up."""
    names = ("verl_staleness_0", "verl_staleness_0_1", "verl_staleness_0_3", "verl_staleness_0_5")
    waits = [table[n]["predicted"] for n in names]
    assert waits == sorted(waits, reverse=True)
    assert (waits[0] - waits[-1]) / (128.47 - 33.14) - 1 == pytest.approx(0.23, abs=0.03)
    left = [table[n]["measured"] - w for n, w in zip(names, waits)]
    assert left == sorted(left) and left[0] > 0
    assert left[-1] == pytest.approx(33.14, abs=1.0)


def test_fully_async_published_step_is_one_sync(table):
    """verl's fully async step (one logged row) is trigger_parameter_sync_step = 4 local updates of
    require_batches 4 x ppo_mini_batch_size 32 prompts and one parameter sync, whose count of started
    prompts restarts only at that sync (lag_release="sync", as rollsim.configs.load reads the recipe)."""
    c = validation.case("verl_fully_async_128")
    assert c.steps_per_row == 4 and c.run.sync_every == 4
    assert (c.run.batch_size, c.run.group_size) == (128 * 16, 16)
    assert c.run.train_step_s == pytest.approx((150.63 - 33.14) / 4)
    assert c.run.pipeline.lag_release == "sync" and c.run.pipeline.max_lag_samples == 12288
    r = table["verl_fully_async_128"]  # its rollout keeps up: a published step is the 4 updates' training
    assert r["step_s"] == pytest.approx(4 * c.run.train_step_s, rel=0.01) and r["wait_s"] < 1.0


@pytest.mark.parametrize("name, gpus, staleness", [("verl_fully_async_32", 16, 0.5), ("verl_fully_async_64", 32, 0.5),
                                                    ("verl_fully_async_128", 64, 0.5), ("verl_staleness_0", 64, 0.0),
                                                    ("verl_staleness_0_1", 64, 0.1), ("verl_staleness_0_3", 64, 0.3)])
def test_fully_async_cases_are_what_the_importer_reads(tmp_path, name, gpus, staleness):
    """validate and import agree: each verl fully async case's run is what rollsim.configs.load reads from
    the case's launch script (one vLLM server per rollout GPU with max_num_seqs 1024, the cases' decoding
    assumption; ppo_mini_batch_size 32, require_batches 4, trigger_parameter_sync_step 4), and its rollout slots
    are verl's concurrency cap: max_concurrent_samples = min(16 prompts x servers, max_required_samples)
    (verl/experimental/fully_async_policy/fully_async_rollouter.py, set_max_required_samples) x rollout.n."""
    from rollsim import configs

    script = tmp_path / "fa.sh"
    script.write_text(
        "python3 -m verl.experimental.fully_async_policy.fully_async_main data.max_response_length=28672 "
        "actor_rollout_ref.rollout.n=16 actor_rollout_ref.rollout.tensor_model_parallel_size=1 "
        "actor_rollout_ref.rollout.max_num_seqs=1024 actor_rollout_ref.actor.ppo_mini_batch_size=32 "
        "async_training.require_batches=4 async_training.trigger_parameter_sync_step=4 "
        f"async_training.staleness_threshold={staleness} async_training.partial_rollout={staleness > 0} "
        f"rollout.nnodes=1 rollout.n_gpus_per_node={gpus} trainer.nnodes=1 trainer.n_gpus_per_node={gpus}\n")
    imp = configs.load(script)
    c = validation.case(name)
    assert c.run.pipeline == imp.scenario.pipeline
    assert (c.run.batch_size, c.run.group_size, c.run.sync_every) == (imp.scenario.batch_size, 16, 4)
    assert c.steps_per_row == imp.steps_per_logged_step == 4
    assert c.run.lengths.max_tokens == imp.scenario.lengths.max_tokens == 28672.0
    # 16 prompts per server, within the staleness bound int(128 x (1 + staleness) x 4) prompts
    cap = min(16 * gpus, int(128 * (1 + staleness) * 4)) * 16
    assert imp.scenario.rollout_slots == cap
    # the cases spread it over the servers, a whole number each (the bound keeps the sequences to the cap)
    assert c.run.slots_per_instance == -(-cap // gpus) and c.run.rollout_slots == gpus * c.run.slots_per_instance
    assert c.run.rollout_slots - cap < gpus
    # 65,536 (64 GPUs x 1,024) before; the 16:16 run decodes at most 256 prompts' answers at once, not 16,384
    assert {16: 4096, 32: 8192}.get(gpus, cap) == cap


def test_one_step_off_overlap_is_the_reason():
    """The one-step speedup comes from overlap: its step is at least the trainer's time and at most
    the generation on 4 GPUs plus a margin."""
    c = validation.cases_by_name()["verl_one_step_fsdp2"]
    p = c.predict()
    assert p["step_s"] >= c.run.train_step_s - 1e-6
    assert p["step_s"] < p["sync_step_s"]


def test_areal_eta_shape():
    """AReaL (arXiv 2505.24298): effective throughput rises steeply from eta = 0 to 2, then flattens."""
    df = validation.areal_eta_curve()
    rel = dict(zip(df["eta"].to_list(), df["relative"].to_list()))
    assert rel[2] >= 1.5 * rel[0]
    for eta in (2, 4, 8):
        assert abs(rel[eta] - 1.0) <= 0.05
    assert df["staleness_mean"].to_list() == sorted(df["staleness_mean"].to_list())


def test_areal_table1_is_listed_as_not_reproduced_with_the_reason():
    (key, why), = validation.NOT_REPRODUCED.items()
    assert "2.77x" in key and "9 %" in why


def test_roofline_decode_by_hand():
    """Qwen2.5-7B on H20, 1,500 tokens of context: base = 2 * 7.62e9 / (4e12 * 0.7) = 5.443 ms;
    per sequence = 1500 * 57,344 / 2.8e12 + 2 * 7.62e9 / (148e12 * 0.6) = 0.0307 + 0.1716 ms."""
    v, s = roofline_decode("Qwen2.5-7B", "H20", context_tokens=1500.0)
    base = 2 * 7.62e9 / 2.8e12
    per = 1500 * 57344 / 2.8e12 + 2 * 7.62e9 / (148e12 * 0.6)
    assert v == pytest.approx(1 / (base + per), rel=1e-12)
    assert s == pytest.approx(per / (base + per), rel=1e-12)
    assert 170 < v < 185
    # tensor parallelism divides both costs: the speed doubles, the slowdown stays
    v2, s2 = roofline_decode("Qwen2.5-7B", "H20", context_tokens=1500.0, tp=2)
    assert v2 == pytest.approx(2 * v) and s2 == pytest.approx(s)


@pytest.mark.parametrize("kwargs, field", [
    (dict(model="GPT-9", gpu="H20", context_tokens=1.0), "model"),
    (dict(model="Qwen2.5-7B", gpu="TPU", context_tokens=1.0), "gpu"),
    (dict(model="Qwen2.5-7B", gpu="H20", context_tokens=0.0), "context_tokens"),
    (dict(model="Qwen2.5-7B", gpu="H20", context_tokens=1.0, tp=0), "tp"),
    (dict(model="Qwen2.5-7B", gpu="H20", context_tokens=1.0, compute_efficiency=1.5), "compute_efficiency"),
])
def test_roofline_decode_bad_input(kwargs, field):
    with pytest.raises(ScenarioError, match=f"^{field}:"):
        roofline_decode(**kwargs)


def test_validate_unknown_case():
    with pytest.raises(ScenarioError, match="^names: unknown case 'nope'"):
        validation.validate(["nope"])


def test_cli_validate(capsys):
    assert cli.main(["validate", "--case", "chapter", "--case", "verl_one_step_megatron", "--notes"]) == 0
    out = capsys.readouterr().out
    assert "verl one_step_off, Megatron" in out and "1.38" in out and "ok, in band 1.2-1.4" in out
    assert "assumed: roofline decoding" in out
    assert cli.main(["validate", "--case", "chapter", "--format", "csv"]) == 0
    csv = pl.read_csv(capsys.readouterr().out.encode())
    assert csv["case"].to_list() == ["chapter"] and math.isclose(csv["measured"][0], 2.0)


def test_fully_async_predictions_against_the_length_shape():
    """Refitting the mean for another log-normal shape (sigma 0.8 / 1.5) moves the 32- and 64-GPU
    predictions by under 7 %: their misses are not an artefact of sigma = 1.15. The 128-GPU one moves
    more (README "What the misses say"): with a lighter tail the refitted answers are longer, the
    rollout on half the GPUs no longer keeps up, and the speedup falls from 3.03 to 2.52."""
    for name, low, high in (("verl_fully_async_32", 1.545, 1.715), ("verl_fully_async_64", 2.169, 2.271),
                            ("verl_fully_async_128", 2.524, 3.033)):
        df = validation.sensitivity(name, (0.8, 1.5))
        base = validation.validate([name])["predicted"][0]
        assert df["predicted"].to_list() == pytest.approx([low, high], rel=0.02), name
        if name != "verl_fully_async_128":
            assert (df["predicted"] / base - 1).abs().max() < 0.07, name
        if name != "verl_fully_async_32":  # (its long answers hit the 28K cap, which the heavier tail feels more)
            assert df["mean_tokens"][0] > df["mean_tokens"][1]  # a heavier tail needs a smaller mean for the same time


def test_one_step_fsdp2_depends_on_the_tail():
    """The FSDP2 one-step case (20K max response) does depend on the shape: a lighter tail means a
    larger fitted mean and a slower 4-GPU rollout, so a smaller speedup."""
    df = validation.sensitivity("verl_one_step_fsdp2", (0.6, 1.5))
    assert df["predicted"][0] < df["predicted"][1] - 0.1


def test_sensitivity_bad_input():
    with pytest.raises(ScenarioError, match="^name: unknown case"):
        validation.sensitivity("nope")
    with pytest.raises(ScenarioError, match="^name: case 'chapter' has no fitted length scale"):
        validation.sensitivity("chapter")


def test_presets_hold_the_published_runs():
    from rollsim import OneStepAsync

    sync, run = validation.published("verl_one_step_fsdp2")
    assert isinstance(run.pipeline, OneStepAsync)
    assert (sync.rollout_slots, run.rollout_slots) == (16 * 1024, 4 * 1024)  # 16 GPUs colocated, 4 for rollout
    assert (run.batch_size, run.group_size, run.lengths.max_tokens) == (8192, 16, 20480.0)
    assert run.train_step_s == pytest.approx(520 - 45)
    _, fa = validation.published("verl_fully_async_128")
    assert fa.pipeline.max_lag_samples == 12288 and fa.pipeline.on_update == "keep_recompute"
    with pytest.raises(ScenarioError, match="^name: unknown published run"):
        validation.published("nope")


def test_cli_validate_prints_the_areal_eta_curve(capsys):
    assert cli.main(["validate"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") >= 13
    line = [ln for ln in out.splitlines() if ln.startswith("AReaL (arXiv 2505.24298)")][0]
    assert "relative to eta = 8: 0: 0.56, 1: 1.01" in line
