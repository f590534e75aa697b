"""Resources: training time that scales with tokens, colocated placement, GPU split search,
dashboard metrics."""

import json

import polars as pl
import pytest

from rollsim import FullyAsync, OneStepAsync, Scenario, ScenarioError, Synchronous, resources, simulate
from rollsim.cli import main
from rollsim.simulation import _simulate


@pytest.mark.filterwarnings("ignore::rollsim.GenerationOutrunsTrainingWarning")
def test_training_time_scales_with_batch_tokens():
    """Each step lasts train_step_s + train_s_per_token * tokens in the batch, in every pipeline."""
    for pipeline in (Synchronous(), OneStepAsync(), FullyAsync(), FullyAsync(on_update="keep_stale")):
        sc = Scenario(pipeline=pipeline, train_step_s=10.0, train_s_per_token=1e-4, horizon_s=3600.0)
        st = simulate(sc).steps
        assert (st["end_s"] - st["start_s"]).to_list() == pytest.approx((10.0 + 1e-4 * st["tokens"]).to_list())
    # the general engine and the fast path agree with a per-token cost too
    sc = Scenario(train_step_s=10.0, train_s_per_token=2e-4, horizon_s=3600.0, rng="python")
    assert simulate(sc).steps.equals(_simulate(sc, general_engine=True).steps)
    # throughput ratio counts it: 256 * 30 / mean * (10 + 2e-4 * 512 * mean) / 512
    mean = sc.lengths.mean_tokens()
    assert sc.throughput_ratio() == pytest.approx(256 * 30 / mean * (10 + 2e-4 * 512 * mean) / 512)


def test_colocated_pays_the_switch_every_step():
    sc = Scenario(pipeline=Synchronous(), rng="python")
    co = resources.colocated(sc, offload_s=11.2, onload_s=3.8)  # 0.6B on one L20 (semantics.md)
    a, b = simulate(sc).steps, simulate(co).steps
    assert (b["end_s"] - b["start_s"]).to_list() == pytest.approx([75.0] * b.height)
    assert b["end_s"].max() > a["end_s"].max()
    with pytest.raises(ScenarioError, match="^pipeline:"):
        resources.colocated(Scenario(), 1.0, 1.0)
    with pytest.raises(ScenarioError, match="^offload_s:"):
        resources.colocated(sc, -1.0, 1.0)


def test_disaggregated_maps_gpus_to_slots_and_step_time():
    sc = resources.disaggregated(Scenario(), rollout_gpus=8, train_gpus=8, gpus_per_instance=2,
                                 slots_per_instance=64, gpu_s_per_token=0.016, train_fixed_s=5.0)
    assert (sc.rollout_slots, sc.train_step_s, sc.train_s_per_token) == (256, 5.0, 0.002)
    with pytest.raises(ScenarioError, match="^rollout_gpus:"):
        resources.disaggregated(Scenario(), rollout_gpus=3, train_gpus=8, gpus_per_instance=2,
                                slots_per_instance=64, gpu_s_per_token=0.01)


def test_gpu_split_search_finds_the_balance():
    """Too few rollout GPUs starve the trainer, too many starve training: the best split is
    interior, and its throughput beats both ends."""
    sc = Scenario(horizon_s=3 * 3600.0, pipeline=FullyAsync(max_staleness=2))
    res = resources.gpu_split(sc, 32, gpus_per_instance=1, slots_per_instance=16, gpu_s_per_token=0.004,
                              train_fixed_s=5.0)
    t = res.table
    assert t.height == 31 and t["rollout_gpus"].to_list() == list(range(1, 32))
    tput = t["tokens_trained_per_s"].to_list()
    best = res.best["rollout_gpus"]
    assert 1 < best < 31 and max(tput) == res.best["tokens_trained_per_s"]
    assert tput[0] < max(tput) and tput[-1] < max(tput)
    first, last = t.row(0, named=True), t.row(-1, named=True)
    assert first["trainer_idle_fraction"] > 0.5  # one rollout GPU cannot feed 31 training GPUs
    assert last["trainer_idle_fraction"] < 0.05  # 31 rollout GPUs outrun one training GPU
    assert (t["tokens_per_s_per_gpu"] * 32 - t["tokens_trained_per_s"]).abs().max() < 1e-6


def test_run_metrics():
    res = simulate(Scenario(rng="python", pipeline=Synchronous()))
    m = resources.run_metrics(res, gpus=16)
    st = res.steps
    assert m["step_time_s"] == pytest.approx(st["start_s"].diff().drop_nulls().mean())
    assert m["train_s"] == pytest.approx(60.0)
    assert m["tokens_trained_per_s"] == pytest.approx(res.summary["tokens_trained"] / res.summary["end_s"])
    assert m["tokens_per_s_per_gpu"] == pytest.approx(m["tokens_trained_per_s"] / 16)
    # synchronous: generation time + training = step time (the trainer waits for every batch)
    assert m["generation_s"] + m["train_s"] == pytest.approx(m["step_time_s"], rel=0.01)


def test_split_cli(capsys):
    assert main(["split", "--gpus", "8", "--gpu-s-per-token", "0.004", "--horizon-s", "1800",
                 "--slots-per-instance", "32"]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    # what was searched, before the table: the budget, the splits tried, the instances, the trainer, the
    # pipeline, the objective and its limits, then the rest of the scenario
    assert header == ("rollsim split: 8 GPUs, rollout 1-7 (instances of 1 GPU x 32 slots x 30 tokens/s, no KV capacity limit), training "
                      "the rest at 0.004 GPU-s per token + 0 s per step, pipeline fully-async; objective: most tokens "
                      "trained per second (limits: at least 6 training steps, generation does not outrun training, "
                      "drop_fraction <= 5.0%); batch 512, 1800 s, lengths lognormal(mu=7.6, sigma=1), max 16384 "
                      "tokens, rng=fast, seed=0")
    assert len(lines) == 9 and lines[0].split()[-4:] == ["dropped", "stale", "max", "runaway"]
    # 1800 s is less than two steps of any split: none is recommended (the 1-GPU split, once "best",
    # completed no step), each says so, and the runaway ones say that too
    assert not any(ln.endswith("<- best") for ln in lines)
    assert all("  excluded: only " in ln and "(fewer than 6: too few to trust its rates" in ln for ln in lines[1:8])
    assert all("generation outruns training" in ln for ln in lines[2:8])
    assert lines[-1].startswith("no split meets the limits (at least 6 training steps, generation does not outrun "
                                "training, drop_fraction <= 5.0%); nearest: 1 rollout + 7 training GPUs, 0 tokens "
                                "trained/s, excluded because only 0 training steps completed")


def test_gpu_split_does_not_recommend_a_runaway_split(capsys):
    """The chapter's pool of 64-sequence instances on 16 GPUs: 2 rollout GPUs train the most tokens
    per second, but their ready queue grows by 42 samples per step (staleness without bound); every
    split from 2 to 15 rollout GPUs runs away, so the recommendation is 1 rollout GPU, and the table
    says why each other split was left out."""
    res = resources.gpu_split(Scenario(), 16, gpus_per_instance=1, slots_per_instance=64, gpu_s_per_token=0.004)
    t = res.table
    for col in ("drop_fraction", "staleness_mean", "staleness_max", "generation_outruns_training", "runaway",
                "excluded_because", "rank"):
        assert col in t.columns
    fastest = t.sort("tokens_trained_per_s", descending=True).row(0, named=True)
    assert fastest["rollout_gpus"] == 2 and fastest["generation_outruns_training"] and fastest["rank"] is None
    assert fastest["excluded_because"] == ("generation outruns training (ready queue +42 samples per step: staleness "
                                           "grows without bound)")
    assert res.best is not None and res.best["rollout_gpus"] == 1 and not res.best["runaway"]
    assert res.best["tokens_trained_per_s"] == pytest.approx(1730.67, abs=0.01)
    assert t["runaway"].to_list() == [False] + [True] * 14 and t["rank"].to_list() == [1] + [None] * 14
    # 14 and 15 rollout GPUs train 3 and 2 steps: too few to call the growth runaway, predicted from the ratio
    assert t["generation_outruns_training"].to_list()[-2:] == [False, False]
    assert t["excluded_because"][-1] == (
        "only 2 training steps completed (fewer than 6: too few to trust its rates; a longer horizon_s); generation "
        "outruns training (throughput_ratio 115.20 > 1; the ready queue grew by 31905 samples per step over 2 steps, "
        "too few to call it growth without bound; run a longer horizon_s to see it)")
    assert res.verdict == ("best: 1 rollout + 15 training GPUs, 1731 tokens trained/s at mean staleness 0.53 (limits: "
                           "at least 6 training steps, generation does not outrun training, drop_fraction <= 5.0%)")
    # asked for explicitly, the runaway splits compete
    loose = resources.gpu_split(Scenario(), 16, gpus_per_instance=1, slots_per_instance=64, gpu_s_per_token=0.004,
                                rollout_gpus=[1, 2, 3], exclude_runaway=False)
    assert loose.best["rollout_gpus"] == 2 and loose.table["rank"].to_list() == [3, 1, 2]


def test_gpu_split_limits_drops_and_staleness():
    """The README's search (cap 2, 16-sequence instances): more rollout GPUs drop more and more of
    what they generate (13 % to 77 %); the default limit (5 %) keeps the best at 6 rollout GPUs
    (2.5 % dropped); tighter limits move it."""
    sc = Scenario(horizon_s=3 * 3600.0, pipeline=FullyAsync(max_staleness=2))
    kw = dict(gpus_per_instance=1, slots_per_instance=16, gpu_s_per_token=0.004, train_fixed_s=5.0)
    res = resources.gpu_split(sc, 16, **kw)
    t = res.table
    assert res.best["rollout_gpus"] == 6 and res.best["drop_fraction"] == pytest.approx(0.0248, abs=1e-4)
    excluded = t.filter(pl.col("excluded_because").is_not_null())
    # 1 and 15 rollout GPUs complete 3 and 2 steps in 3 h: too few to trust (14 drops 77 % and has 4)
    assert excluded["rollout_gpus"].to_list() == [1, *range(7, 16)]
    assert excluded["steps"].to_list() == [3, 17, 16, 14, 13, 11, 9, 6, 4, 2]
    dropping = excluded.filter(pl.col("drop_fraction") > 0.05)
    assert dropping["rollout_gpus"].to_list() == list(range(7, 15))
    assert dropping["drop_fraction"].min() > 0.13 and dropping["drop_fraction"].max() > 0.77
    assert dropping["excluded_because"][0] == "drop_fraction 13.5% > max_drop_fraction 5.0%"
    assert t.sort("rank", nulls_last=True).row(0, named=True) == res.best   # best first
    assert resources.gpu_split(sc, 16, max_drop_fraction=0.01, **kw).best["rollout_gpus"] == 5
    strict = resources.gpu_split(sc, 16, max_staleness_mean=0.9, rollout_gpus=[4, 5, 6], **kw)
    assert strict.best["rollout_gpus"] == 4
    assert strict.table["excluded_because"].to_list() == [None, "staleness_mean 0.95 > max_staleness_mean 0.9",
                                                         "staleness_mean 1.56 > max_staleness_mean 0.9"]


def test_gpu_split_says_when_no_split_qualifies():
    res = resources.gpu_split(Scenario(), 16, gpus_per_instance=1, slots_per_instance=64, gpu_s_per_token=0.004,
                              rollout_gpus=[3, 4, 5])
    assert res.best is None and res.table["rank"].null_count() == 3
    assert res.nearest is not None and res.nearest["rollout_gpus"] == 3   # the slowest-growing queue
    assert res.verdict == ("no split meets the limits (at least 6 training steps, generation does not outrun "
                           "training, drop_fraction <= 5.0%); "
                           "nearest: 3 rollout + 13 training GPUs, 2990 tokens trained/s, excluded because generation "
                           "outruns training (ready queue +362 samples per step: staleness grows without bound)")


def test_gpu_split_reports_progress():
    calls = []
    res = resources.gpu_split(Scenario(horizon_s=1800.0), 4, gpus_per_instance=1, slots_per_instance=32,
                              gpu_s_per_token=0.004, colocated_switch_s=10.0, progress=lambda d, n: calls.append((d, n)))
    assert res.table.height == 4 and calls == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]


def test_split_refuses_the_flags_it_sets_at_any_value(capsys):
    """--train-step-s 60 and --rollout-slots 256 (their defaults) were accepted and did nothing."""
    for flags in (["--train-step-s", "60"], ["--rollout-slots", "256"], ["--train-s-per-token", "0"],
                  ["--logprob-s-per-token", "0"]):
        assert main(["split", "--gpus", "4", "--gpu-s-per-token", "0.004", *flags]) == 2
        assert f"split: {flags[0]} cannot be set: the split sizes the pool" in capsys.readouterr().err


def test_readme_split_table_is_what_the_cli_prints(capsys):
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```text\n\$ rollsim split (.*?)\n(.*?)```", text, flags=re.S)
    assert block is not None
    assert main(["split", *block.group(1).split()]) == 0
    assert capsys.readouterr().out == block.group(2)


def test_colocated_sized_from_gpus():
    """Every GPU serves the rollout and then the trainer: 8 GPUs in instances of 2 with 64 slots
    each -> 256 slots; training divides 0.016 GPU-s per token over all 8 GPUs."""
    sc = resources.colocated(Scenario(pipeline=Synchronous()), 11.2, 3.8, gpus=8, gpus_per_instance=2,
                             slots_per_instance=64, gpu_s_per_token=0.016, train_fixed_s=5.0)
    assert (sc.rollout_slots, sc.train_step_s, sc.train_s_per_token, sc.weight_sync_s) == (256, 5.0, 0.002, 15.0)
    with pytest.raises(ScenarioError, match="^gpus: sizing a colocated pool needs"):
        resources.colocated(Scenario(pipeline=Synchronous()), 1.0, 1.0, gpus=8)
    with pytest.raises(ScenarioError, match="^rollout_gpus: must be a multiple"):
        resources.colocated(Scenario(pipeline=Synchronous()), 1.0, 1.0, gpus=7, gpus_per_instance=2,
                            slots_per_instance=4, gpu_s_per_token=0.01)


def test_gpu_split_with_the_colocated_baseline(capsys):
    """The colocated synchronous row runs on all GPUs taking turns: its trainer idles while the
    rollout generates, the rollout idles while it trains, and here the best asynchronous split
    trains more tokens per second than it."""
    sc = Scenario(horizon_s=3 * 3600.0, pipeline=FullyAsync(max_staleness=2))
    res = resources.gpu_split(sc, 16, gpus_per_instance=1, slots_per_instance=16, gpu_s_per_token=0.004,
                              train_fixed_s=5.0, colocated_switch_s=15.0)
    t = res.table
    assert t["placement"].to_list() == ["disaggregated"] * 15 + ["colocated"]
    co = t.row(-1, named=True)
    assert (co["rollout_gpus"], co["train_gpus"], co["rollout_slots"], co["staleness_mean"]) == (16, 16, 256, 0.0)
    assert co["trainer_idle_fraction"] > 0.3 and co["rollout_utilization"] < 0.5
    assert res.best["placement"] == "disaggregated"
    assert res.best["tokens_trained_per_s"] > 1.3 * co["tokens_trained_per_s"]
    # the colocated step: generation + training + the 15 s switch (synchronous: trainer waits for all)
    direct = simulate(resources.colocated(sc.replace(pipeline=Synchronous()), 15.0, 0.0, gpus=16, slots_per_instance=16,
                                          gpu_s_per_token=0.004, train_fixed_s=5.0))
    # over the same 3 h as every split (rollsim.compare's rate), not over its own end after the horizon
    done = direct.steps.filter(pl.col("completed") & (pl.col("end_s") <= sc.horizon_s))
    assert direct.summary["end_s"] > sc.horizon_s
    assert co["tokens_trained_per_s"] == pytest.approx(done["tokens"].sum() / sc.horizon_s)
    assert co["steps_by_horizon"] == done.height == co["steps"] - 1
    assert main(["split", "--gpus", "4", "--gpu-s-per-token", "0.004", "--horizon-s", "1800",
                 "--slots-per-instance", "32", "--colocated-switch-s", "10"]) == 0
    out = capsys.readouterr().out
    assert "(colocated, synchronous: every GPU takes turns; rollout util " in out and len(out.splitlines()) == 7
    assert "or all 4 colocated (synchronous, 10 s switch per step)" in out.splitlines()[0]


def test_utilization_over_time():
    """Synchronous chapter run: the pool is full at the start of each batch and drains in the tail,
    so early intervals are near 100 % and the whole-run mean matches the summary's utilization."""
    res = simulate(Scenario(rng="python", pipeline=Synchronous()))
    df = resources.utilization_over_time(res, bin_s=60.0)
    assert df["start_s"][0] == 0.0 and df["end_s"][-1] == pytest.approx(res.summary["end_s"])
    assert df["utilization"][0] == pytest.approx(1.0)
    assert 0.0 <= df["utilization"].min() and df["utilization"].max() <= 1.0
    width = (df["end_s"] - df["start_s"]).to_numpy()
    mean = float((df["utilization"].to_numpy() * width).sum() / width.sum())
    assert mean == pytest.approx(res.summary["rollout_utilization"], rel=0.01)
    with pytest.raises(ScenarioError, match="^res: needs per-sample rows"):
        resources.utilization_over_time(simulate(Scenario(horizon_s=300.0), record="summary"), 60.0)


def test_split_keeps_batched_decoding_per_instance():
    """A scenario that models instances keeps them through a split: 6 rollout GPUs in instances of
    2 with 32 sequences each are 3 instances of 32 slots, with their KV capacity."""
    base = Scenario(slots_per_instance=16, decode_slowdown_per_seq=0.01, kv_cache_tokens=200_000.0)
    sc = resources.disaggregated(base, rollout_gpus=6, train_gpus=2, gpus_per_instance=2, slots_per_instance=32,
                                 gpu_s_per_token=0.004)
    assert (sc.rollout_slots, sc.slots_per_instance, sc.kv_cache_tokens) == (96, 32, 200_000.0)
    plain = resources.disaggregated(Scenario(), rollout_gpus=6, train_gpus=2, gpus_per_instance=2,
                                    slots_per_instance=32, gpu_s_per_token=0.004)
    assert (plain.rollout_slots, plain.slots_per_instance) == (96, 0)


def test_cli_resource_flags(capsys):
    """run takes the resource flags; split sizes with them and refuses the flags it would override."""
    assert main(["run", "--horizon-s", "1800", "--slots-per-instance", "32", "--decode-slowdown-per-seq", "0.01",
                 "--kv-cache-tokens", "60000", "--rollout-pause-s", "2", "--train-s-per-token", "1e-6",
                 "--logprob-s-per-token", "1e-6"]) == 0
    s = json.loads(capsys.readouterr().out)
    direct = simulate(Scenario(horizon_s=1800.0, slots_per_instance=32, decode_slowdown_per_seq=0.01,
                               kv_cache_tokens=60000.0, rollout_pause_s=2.0, train_s_per_token=1e-6,
                               logprob_s_per_token=1e-6), record="summary").summary
    assert s["steps"] == direct["steps"] and s["preemptions"] == direct["preemptions"] > 0
    assert main(["split", "--gpus", "4", "--gpu-s-per-token", "0.004", "--horizon-s", "1800",
                 "--slots-per-instance", "32", "--decode-slowdown-per-seq", "0.01", "--kv-cache-tokens", "60000",
                 "--allow-runaway"]) == 0
    lines = capsys.readouterr().out.splitlines()  # 1800 s: under 6 steps each, so none is recommended
    assert len(lines) == 6 and lines[-1].startswith("no split meets the limits (at least 6 training steps, "
                                                    "drop_fraction <= 5.0%); nearest: 2 rollout + 2 training GPUs, "
                                                    "0 tokens trained/s")
    assert main(["split", "--gpus", "4", "--gpu-s-per-token", "0.004", "--train-s-per-token", "1e-5"]) == 2
    assert "split: --train-s-per-token cannot be set" in capsys.readouterr().err
