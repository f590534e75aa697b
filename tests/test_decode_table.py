"""Decode speed from a measured throughput table (``Scenario.decode_throughput_table``): a sequence
on an instance running ``n`` sequences decodes at ``throughput(n) / n`` tokens/s, ``throughput``
linear between the table's points."""

import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollsim import Empirical, FullyAsync, Scenario, ScenarioError, Synchronous, _rollsim, simulate
from invariants import assert_conserved, run_quiet
from strategies import real_scenarios

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

TINY = dict(rollout_slots=2, batch_size=3, train_step_s=5.0, horizon_s=10.0, lengths=Empirical([10.0]),
            pipeline=Synchronous(), slots_per_instance=2)


def test_golden_two_sequences_from_the_table():
    """One instance of 2 slots; throughput 2 tokens/s alone, 3 at 3 on board, so 2.5 at 2 (linear):
    t=0   s0, s1 start; 1.25 token/s each -> both finish at 10 / 1.25 = 8
    t=8   s2 starts alone: 2 tokens/s -> done at 13; the batch is generated at 13."""
    sc = Scenario(decode_tokens_per_s=2.0, decode_throughput_table=((1, 2.0), (3, 3.0)), **TINY)
    assert [sc.decode_speed(n) for n in (1, 2)] == [2.0, 1.25]
    res = simulate(sc)
    assert res.samples["finish_s"].to_list() == [8.0, 8.0, 13.0]
    assert res.steps["start_s"].to_list() == [13.0]


def test_constant_throughput_table_is_slowdown_one():
    """throughput(n) = 1 token/s for every n is exactly the slowdown model with slowdown 1 and
    1 token/s (speed 1 / n either way, bit for bit), on a full scenario with groups and updates."""
    base = Scenario(rollout_slots=32, decode_tokens_per_s=1.0, batch_size=32, train_step_s=300.0, horizon_s=40000.0,
                    lengths=Empirical([30.0, 200.0, 900.0]), group_size=4, slots_per_instance=8,
                    pipeline=FullyAsync(max_staleness=2, on_update="keep_recompute"), prompt_tokens=50.0,
                    prefill_tokens_per_s=100.0, seed=4)
    a = simulate(base.replace(decode_slowdown_per_seq=1.0))
    b = simulate(base.replace(decode_throughput_table=((1, 1.0), (8, 1.0))))
    assert a.samples.equals(b.samples) and a.steps.equals(b.steps) and a.segments.equals(b.segments)
    assert str(a.summary) == str(b.summary)  # (NaN != NaN)
    assert a.summary["samples_finished"] > 100


def test_table_beyond_the_instance_is_unused_and_points_are_interpolated():
    sc = Scenario(rollout_slots=8, decode_tokens_per_s=60.0, slots_per_instance=4, batch_size=8,
                  decode_throughput_table=((1, 60.0), (3, 120.0), (100, 1.0)))
    # throughput(2) = 90, (3) = 120, (4) = 120 + (1 - 120) / 97
    assert sc.decode_speed(2) == 45.0 and sc.decode_speed(3) == 40.0
    assert sc.decode_speed(4) == pytest.approx((120.0 + (1.0 - 120.0) / 97.0) / 4, rel=1e-15)


def test_throughput_ratio_uses_the_full_instance_speed():
    table = ((1, 60.0), (8, 400.0), (64, 1600.0))
    sc = Scenario(decode_tokens_per_s=60.0, slots_per_instance=64, decode_throughput_table=table, horizon_s=600.0)
    assert sc.decode_speed(64) == 25.0
    plain = Scenario(decode_tokens_per_s=25.0, horizon_s=600.0)
    assert sc.throughput_ratio() == pytest.approx(plain.throughput_ratio(), rel=1e-12)
    assert simulate(sc, record="summary").summary["throughput_ratio"] == pytest.approx(sc.throughput_ratio(), rel=1e-6)
    slow = Scenario(slots_per_instance=64, decode_slowdown_per_seq=0.01, horizon_s=600.0)
    assert slow.throughput_ratio() == pytest.approx(Scenario().throughput_ratio() / (1 + 0.01 * 63), rel=1e-12)
    assert simulate(slow, record="summary").summary["throughput_ratio"] == pytest.approx(slow.throughput_ratio(), rel=1e-6)


def test_to_dict_leaves_the_table_out_by_default():
    assert "decode_throughput_table" not in Scenario().to_dict()
    sc = Scenario(decode_tokens_per_s=60.0, slots_per_instance=256, decode_throughput_table=[(1, 60), (256, 3000.0)])
    assert sc.decode_throughput_table == ((1, 60.0), (256, 3000.0))  # normalized, hashable
    assert sc.to_dict()["decode_throughput_table"] == [[1, 60.0], [256, 3000.0]]
    assert hash(sc) == hash(sc.replace())


@pytest.mark.parametrize("table, message", [
    ([[1, 30.0], [4, 100.0]], None),
    ([[2, 30.0], [4, 100.0]], "decode_throughput_table: must start at batch size 1, got 2"),
    ([[1, 30.0], [3, 100.0]], "decode_throughput_table: must reach slots_per_instance (4): its last batch size is 3"),
    ([[1, 30.0], [4, math.nan]], "decode_throughput_table: throughputs must be in [1e-6, 1e15] tokens/s; item 1 has nan"),
    ([[1, 30.0], [1.5, 3.0]], "decode_throughput_table: must be a list of [running sequences (integer >= 1), tokens/s] "
                              "pairs; item 1 is [1.5, 3.0]"),
    ([[1, 30.0, 2.0]], "decode_throughput_table: must be a list of [running sequences (integer >= 1), tokens/s] "
                       "pairs; item 0 is [1.0, 30.0, 2.0]"),
    ([[1, 31.0], [4, 3.0]], "decode_tokens_per_s: must equal decode_throughput_table's speed at one sequence "
                            "(31 tokens/s) when the table is set, got 30"),
])
def test_engine_checks_the_table_too(table, message):
    """Dicts that bypass ``Scenario`` (the extension's own entry point) get the same checks: a
    ScenarioError, never a panic."""
    d = Scenario(rollout_slots=8, horizon_s=100.0, slots_per_instance=4).to_dict()
    d["decode_throughput_table"] = table
    if message is None:
        assert _rollsim.simulate(d, False)["summary"]["events"] > 0
    else:
        with pytest.raises(ScenarioError) as e:
            _rollsim.simulate(d, False)
        assert str(e.value) == message


tables = st.lists(st.tuples(st.integers(1, 6), st.floats(1.0, 400.0)), min_size=1, max_size=5).map(
    lambda pts: sorted({n: tp for n, tp in pts}.items()))


@settings(max_examples=60)
@given(real_scenarios(), st.sampled_from([1, 2, 4]), tables)
def test_table_decoding_keeps_every_invariant(sc, per, pts):
    """Conservation, utilization and time bounds: an answer decoded in one go takes between
    length / fastest speed and length / slowest speed (over batch sizes 1..per)."""
    if sc.rollout_slots % per:
        per = 1
    pts = [(1, pts[0][1])] + [p for p in pts if p[0] > 1]
    if pts[-1][0] < per:
        pts.append((per, pts[-1][1]))
    sc = sc.replace(slots_per_instance=per, decode_tokens_per_s=pts[0][1], decode_throughput_table=pts)
    speeds = [sc.decode_speed(n) for n in range(1, per + 1)]
    res = run_quiet(sc)
    assert_conserved(res)
    whole = res.samples.filter(pl.col("finish_s").is_not_null() & ~pl.col("aborted") & (pl.col("n_versions") == 1))
    in_one_go = isinstance(sc.pipeline, FullyAsync) and sc.pipeline.on_update in ("continue", "wait", "keep_stale")
    if sc.prompt_tokens == 0 and in_one_go and whole.height:
        dur = whole["finish_s"] - whole["start_s"]
        assert (dur >= whole["length_tokens"] / max(speeds) * (1 - 1e-9) - 1e-9).all()
        assert (dur <= whole["length_tokens"] / min(speeds) * (1 + 1e-9) + 1e-9).all()


def test_bad_tables():
    with pytest.raises(ScenarioError, match="^decode_throughput_table: needs slots_per_instance > 0"):
        Scenario(decode_throughput_table=((1, 30.0),))
    with pytest.raises(ScenarioError, match="^decode_throughput_table: excludes decode_slowdown_per_seq > 0"):
        Scenario(slots_per_instance=2, decode_slowdown_per_seq=0.1, decode_throughput_table=((1, 30.0), (2, 50.0)))
