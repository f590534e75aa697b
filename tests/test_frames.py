"""The frames' schema and contents, the outrun flag, Empirical input, pickling and replace."""

import pickle
import warnings

import numpy as np
import polars as pl
import pytest

import rollsim
from rollsim import (Empirical, FullyAsync, GenerationOutrunsTrainingWarning, LogNormal, Scenario,
                     Synchronous, simulate)


def test_samples_frame_schema():
    res = simulate(Scenario(horizon_s=600.0))
    assert res.samples.schema == pl.Schema({
        "sample_id": pl.UInt32, "group_id": pl.UInt32, "length_tokens": pl.Float64, "start_s": pl.Float64,
        "finish_s": pl.Float64, "version_start": pl.UInt32, "version_end": pl.UInt32, "version_finish": pl.UInt32,
        "n_versions": pl.UInt32, "trained_step": pl.Int64, "staleness": pl.Int64, "staleness_at_finish": pl.Int64,
        "dropped": pl.Boolean, "aborted": pl.Boolean, "slot": pl.UInt32,
        "status": pl.Enum(["trained", "dropped", "ready", "in_flight"]),
    })
    assert res.steps.columns == ["step", "start_s", "end_s", "staleness_mean", "staleness_max", "wait_s",
                                 "samples", "tokens", "ready_after", "tokens_wasted", "tokens_recomputed",
                                 "slot_idle_s", "completed"]
    assert res.segments.columns == ["sample_id", "version", "first_token", "last_token"]
    # in flight at the end: null finish, null staleness
    inflight = res.samples.filter(pl.col("status") == "in_flight")
    assert inflight.height == 256 and inflight["finish_s"].null_count() == 256
    assert inflight["staleness"].null_count() == 256


def test_steps_frame_matches_samples():
    res = simulate(Scenario(rng="python"))
    by_step = (res.samples.filter(pl.col("trained_step").is_not_null())
               .group_by("trained_step").agg(pl.col("staleness").mean().alias("m"), pl.col("staleness").max().alias("x"),
                                             pl.len().alias("n"), pl.col("length_tokens").sum().alias("tok"))
               .sort("trained_step"))
    assert by_step["m"].to_list() == pytest.approx(res.steps["staleness_mean"].to_list())
    assert by_step["x"].to_list() == res.steps["staleness_max"].cast(pl.Int64).to_list()
    assert by_step["n"].to_list() == [512] * res.steps.height
    assert by_step["tok"].to_list() == pytest.approx(res.steps["tokens"].to_list())
    # wait_s: idle time of the trainer before each step
    prev_end = [0.0] + res.steps["end_s"].to_list()[:-1]
    assert res.steps["wait_s"].to_list() == pytest.approx([s - e for s, e in zip(res.steps["start_s"], prev_end)])


def test_staleness_by_length_long_answers_are_staler_and_dropped_more():
    """The chapter's key finding: long answers are staler and, with a cap, dropped more often."""
    res = simulate(Scenario(pipeline=FullyAsync(max_staleness=2), rng="python"))
    t = res.staleness_by_length((1000, 8000))
    assert t["bin"].to_list() == ["[0, 1000)", "[1000, 8000)", "[8000, inf)"]
    st = t["staleness_mean"].to_list()
    dr = t["drop_rate"].to_list()
    assert st[0] < st[1] < st[2]
    assert dr[0] == 0.0 and dr[2] > 0.1
    assert t["samples"].sum() == res.summary["samples_trained"] + res.summary["samples_dropped"]


def test_outrun_regime_is_flagged_and_warned():
    sc = Scenario(train_step_s=900.0, horizon_s=6 * 3600.0, rng="python")
    with pytest.warns(GenerationOutrunsTrainingWarning, match="grows by"):
        s = simulate(sc, record="summary").summary
    assert s["generation_outruns_training"] is True
    assert s["ready_queue_growth_per_step"] > 1000
    assert s["throughput_ratio"] == pytest.approx(sc.throughput_ratio())
    assert s["throughput_ratio"] > 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = simulate(Scenario(rng="python")).summary
    assert s["generation_outruns_training"] is False
    assert s["throughput_ratio"] < 0.5


def test_empirical_from_list_array_and_files(tmp_path):
    values = [300, 800, 1500, 6000, 12000]
    a = Empirical(values)
    b = Empirical(np.array(values, dtype=np.int64))
    assert a == b and hash(a) == hash(b)
    pl.DataFrame({"n": values}).write_csv(tmp_path / "l.csv")
    pl.DataFrame({"n": values, "c": [1, 1, 1, 1, 1]}).write_parquet(tmp_path / "l.parquet")
    c = Empirical.from_file(tmp_path / "l.csv")
    d = Empirical.from_file(tmp_path / "l.parquet", column="n", count_column="c")
    assert np.array_equal(c.values, a.values) and d.weights.tolist() == [1.0] * 5
    sc = Scenario(lengths=c, horizon_s=600.0)
    lens = set(simulate(sc).samples["length_tokens"].to_list())
    assert lens <= {float(v) for v in values} and len(lens) == 5
    with pytest.raises(FileNotFoundError):
        Empirical.from_file(tmp_path / "missing.csv")
    with pytest.raises(rollsim.ScenarioError, match="^lengths.column:"):
        Empirical.from_file(tmp_path / "l.parquet", column="x")
    (tmp_path / "bad.parquet").write_bytes(b"not a parquet file")
    with pytest.raises(rollsim.ScenarioError, match="^lengths.path:"):
        Empirical.from_file(tmp_path / "bad.parquet")


def test_empirical_max_tokens_clips_only_when_asked():
    e = Empirical([100.0, 50000.0])
    assert e.values.max() == 50000.0
    assert Empirical([100.0, 50000.0], max_tokens=16384).values.max() == 16384.0
    with pytest.raises(ValueError):
        e.values[0] = 3.0  # read-only


def test_scenarios_are_immutable_comparable_picklable_replaceable():
    sc = Scenario(lengths=Empirical([1.0, 2.0], [1, 3]), pipeline=FullyAsync(2))
    assert pickle.loads(pickle.dumps(sc)) == sc
    assert hash(pickle.loads(pickle.dumps(sc))) == hash(sc)
    with pytest.raises(AttributeError):
        sc.batch_size = 3
    sc2 = sc.replace(**{"pipeline.max_staleness": 4, "batch_size": 64})
    assert sc2.pipeline == FullyAsync(4) and sc2.batch_size == 64 and sc.batch_size == 512
    sc3 = Scenario().replace(**{"lengths.sigma": 1.5})
    assert sc3.lengths == LogNormal(7.6, 1.5, 16384)
    assert Scenario() == Scenario() and Scenario() != Scenario(seed=1)


def test_weight_sync_adds_to_each_step():
    sc = Scenario(pipeline=Synchronous(), rng="python")
    a = simulate(sc).steps
    b = simulate(sc.replace(weight_sync_s=5.0)).steps
    assert (b["end_s"] - b["start_s"]).to_list() == pytest.approx([65.0] * b.height, abs=1e-9)
    assert (a["end_s"] - a["start_s"]).to_list() == pytest.approx([60.0] * a.height, abs=1e-9)
    assert b["end_s"].max() > a["end_s"].max()


def test_deepseek_r1_dataset():
    e = rollsim.datasets.deepseek_r1_serving()
    assert int(e.weights.sum()) == 1_385_405  # requests in ServeGen's DeepSeek-R1 data (alibaba/ServeGen)
    assert e.values.size == 19_762
    assert round(e.mean_tokens()) == 1527 and e.values.max() == 32768
    assert rollsim.datasets.deepseek_r1_serving(max_tokens=16384).values.max() == 16384
    s = simulate(Scenario(lengths=e, pipeline=FullyAsync(max_staleness=2)), record="summary").summary
    assert s["steps"] > 30 and s["samples_trained"] == 512 * s["steps_started"]
