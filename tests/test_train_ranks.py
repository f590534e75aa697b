"""The per-rank training model (``Scenario.train = TrainRanks(...)``): hand-worked steps, the
dispatches shared with ``rollsim.hardware.training``, properties, and the default left alone."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollsim import (Empirical, FullyAsync, GenerationOutrunsTrainingWarning, LogNormal, OneStepAsync, Scenario, ScenarioError, Synchronous, TrainRanks,
                     _rollsim, simulate)
from rollsim.hardware import training

# two groups of two answers, 100 and 900 tokens (seed 3 draws one of each for the first batch)
TWO_GROUPS = dict(rollout_slots=4, batch_size=4, group_size=2, decode_tokens_per_s=100.0, train_step_s=1.0,
                  horizon_s=11.5, pipeline=Synchronous(), seed=3,
                  lengths=Empirical(np.array([100.0, 100.0, 900.0, 900.0]), groups=np.array([0, 0, 1, 1])))


def _first_step(dispatch: str, **kw: object) -> dict[str, object]:
    sc = Scenario(**TWO_GROUPS, train=TrainRanks(dp_ranks=2, dispatch=dispatch, s_per_token=1e-3, **kw))
    r = simulate(sc)
    assert sorted(r.samples["length_tokens"].to_list()[:4]) == [100.0, 100.0, 900.0, 900.0]
    return r.steps.row(0, named=True)


def test_four_samples_on_two_ranks_contiguous_vs_balanced_by_hand():
    # the batch is ready when the 900-token answers end (9 s at 100 tokens/s); contiguous puts a group
    # on each rank: 0.2 s and 1.8 s, the step waits 1.8 s (+ 1 s fixed); balanced pairs a short and a
    # long answer on each rank: 1.0 s each
    con = _first_step("contiguous")
    assert (con["start_s"], con["end_s"], con["rank_slowest_s"], con["rank_mean_s"]) == (9.0, 11.8, 1.8, 1.0)
    bal = _first_step("balanced")
    assert (bal["start_s"], bal["end_s"], bal["rank_slowest_s"], bal["rank_mean_s"]) == (9.0, 11.0, 1.0, 1.0)
    for d in ("round_robin", "lpt", "balanced_minibatch"):
        assert _first_step(d)["end_s"] == 11.0, d


def test_fixed_quadratic_and_prompt_terms_by_hand():
    # 2 mini-batches of one sample per rank, 0.5 s each; T = 50 + length; 1e-6 s per token**2
    sc = Scenario(**{**TWO_GROUPS, "prompt_tokens": 50.0},
                  train=TrainRanks(dp_ranks=2, s_per_token=1e-3, s_per_token_sq=1e-6, fixed_s=0.5, mini_batches=2))
    row = simulate(sc).steps.row(0, named=True)
    short, long = 0.15 + 0.15**2, 0.95 + 0.95**2  # seconds of a 150- and a 950-token sequence
    # contiguous: one rank trains the short group (one per mini-batch), the other the long one
    assert row["rank_slowest_s"] == pytest.approx(2 * long, rel=1e-12)
    assert row["rank_mean_s"] == pytest.approx(short + long, rel=1e-12)
    assert row["end_s"] - row["start_s"] == pytest.approx(1.0 + 2 * 0.5 + 2 * long, rel=1e-12)


def test_packed_by_hand():
    # first-fit decreasing: with 1000 tokens per micro-batch, [900, 100] twice, one per rank (1.0 s
    # each); with 1800, [900, 900] and [100, 100]: packing fills micro-batches, it does not balance
    row = _first_step("packed", max_tokens_per_gpu=1000.0)
    assert (row["rank_slowest_s"], row["rank_mean_s"]) == (1.0, 1.0)
    row = _first_step("packed", max_tokens_per_gpu=1800.0)
    assert (row["rank_slowest_s"], row["rank_mean_s"]) == (1.8, 1.0)


def test_default_is_todays_model_bit_for_bit():
    base = Scenario(**TWO_GROUPS)
    assert base.train is None and "train" not in base.to_dict()
    r = simulate(base)
    assert "rank_slowest_s" not in r.steps.columns
    # ranks doing nothing add nothing: every step and sample as without the part
    zero = simulate(base.replace(train=TrainRanks(dp_ranks=4)))
    assert zero.steps.drop("rank_slowest_s", "rank_mean_s").equals(r.steps)
    assert zero.samples.equals(r.samples)
    assert set(zero.steps["rank_slowest_s"]) == {0.0}


def test_one_rank_equals_a_per_token_cost():
    # one rank, linear cost: the step is the per-token model's (up to the sum's rounding)
    kw = dict(rollout_slots=64, batch_size=64, group_size=4, horizon_s=4000.0, prompt_tokens=0.0,
              lengths=LogNormal(6.0, 0.8, 4096.0), pipeline=OneStepAsync(), seed=5)
    per = simulate(Scenario(**kw, train_s_per_token=2e-4))
    ranks = simulate(Scenario(**kw, train=TrainRanks(s_per_token=2e-4)))
    np.testing.assert_allclose(ranks.steps["end_s"].to_numpy(), per.steps["end_s"].to_numpy(), rtol=1e-9)
    np.testing.assert_allclose(ranks.steps["rank_slowest_s"].to_numpy(), ranks.steps["rank_mean_s"].to_numpy(),
                               rtol=1e-12)


def test_the_dispatch_is_the_engine_s_and_training_py_calls_it():
    rng = np.random.default_rng(0)
    t = np.round(np.exp(rng.normal(6.5, 1.0, 64))) + 1
    w = training.sequence_flops(training._resolve("Qwen3-4B", "H20")[0], t)
    for d in training.DISPATCHES:
        kw = {"max_tokens_per_gpu": float(t.max())} if d == "packed" else {}
        got = training.assign_ranks(t, 4, dispatch=d, workload=w, mini_batches=2, **kw)
        raw = _rollsim.assign_ranks(t, w, 4, d, 2, kw.get("max_tokens_per_gpu"))
        assert [list(a) for a in got] == [list(a) for a in raw], d
        assert sorted(np.concatenate(got).tolist()) == list(range(64)), d
    # verl's balance_batch on the UniRL-like batch: the slowest rank's share, as docs/hardware_training.md says
    assert not hasattr(training, "_karmarkar_karp")  # no second copy in Python


def _slowest(t: np.ndarray, k: int, dispatch: str, m: int = 1) -> float:
    parts = training.assign_ranks(t, k, dispatch=dispatch, mini_batches=m)
    per = np.array([[t[c].sum() for c in np.array_split(p, m)] for p in parts])
    return float(per.max(axis=0).sum())


lengths = st.lists(st.integers(1, 20000), min_size=1, max_size=24)


@settings(max_examples=200, deadline=None)
@given(lengths, st.sampled_from([1, 2, 3, 4]), st.sampled_from([1, 2]))
def test_balancing_is_never_slower_than_contiguous(xs, k, m):
    n = len(xs) - len(xs) % (k * m)
    if n == 0:
        return
    t = np.array(xs[:n], dtype=float)
    con = _slowest(t, k, "contiguous", m)
    for d in ("balanced", "balanced_minibatch", "lpt"):
        assert _slowest(t, k, d, m) <= con, d


@settings(max_examples=200, deadline=None)
@given(lengths, st.sampled_from([1, 2, 4]))
def test_doubling_the_ranks_is_never_slower_for_compute_only_costs(xs, k):
    # contiguous and round-robin chunks of 2k ranks nest in those of k; equal rank speed
    n = len(xs) - len(xs) % (2 * k)
    if n == 0:
        return
    t = np.array(xs[:n], dtype=float)
    for d in ("contiguous", "round_robin"):
        assert _slowest(t, 2 * k, d) <= _slowest(t, k, d), d


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([2, 4, 8]), st.floats(0.3, 1.5))
def test_in_the_engine_balanced_never_slower_and_more_ranks_never_slower(seed, k, sigma):
    # the first batch is the same whatever the trainer does (fully async: it forms before any step ends)
    kw = dict(rollout_slots=64, batch_size=64, group_size=8, horizon_s=3000.0, seed=seed,
              lengths=LogNormal(6.5, sigma, 8192.0, group_correlation=0.6), pipeline=FullyAsync())

    def first(**tr: object) -> dict[str, float]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", GenerationOutrunsTrainingWarning)  # unbounded on purpose
            res = simulate(Scenario(**kw, train=TrainRanks(s_per_token=1e-4, **tr)), record="summary")
        return res.steps.row(0, named=True)

    con, bal = first(dp_ranks=k), first(dp_ranks=k, dispatch="balanced")
    assert bal["rank_slowest_s"] <= con["rank_slowest_s"]
    assert bal["rank_mean_s"] == pytest.approx(con["rank_mean_s"], rel=1e-12)
    assert first(dp_ranks=2 * k)["rank_slowest_s"] <= con["rank_slowest_s"]
    assert con["rank_slowest_s"] >= con["rank_mean_s"] * (1 - 1e-12)


def test_train_round_trips_through_toml_and_the_wire():
    sc = Scenario(batch_size=64, train=TrainRanks(dp_ranks=8, dispatch="packed", s_per_token=1e-4,
                                                  max_tokens_per_gpu=20000.0, mini_batches=2))
    assert Scenario.from_toml_str(sc.to_toml()) == sc
    assert sc.to_dict()["train"] == {"kind": "train_ranks", **dataclasses.asdict(sc.train)}
    assert repr(sc.train).startswith("TrainRanks(dp_ranks=8")


def test_the_engine_refuses_what_python_refuses_with_the_same_words():
    d = Scenario(batch_size=6, train=TrainRanks(dp_ranks=2)).to_dict()
    d["train"]["dp_ranks"] = 4
    with pytest.raises(ScenarioError) as e:
        _rollsim.simulate(d, False)
    with pytest.raises(ScenarioError) as p:
        Scenario(batch_size=6, train=TrainRanks(dp_ranks=4))
    assert str(e.value) == str(p.value) == ("train.dp_ranks: dp_ranks (4) must divide batch_size (6): every rank "
                                            "trains as many samples")
    d["train"]["dp_ranks"] = 0
    with pytest.raises(ScenarioError, match=r"^train\.dp_ranks: must be in \[1, 1048576\], got 0$"):
        _rollsim.simulate(d, False)
    d["train"] = {**d["train"], "dp_ranks": 2, "dispatch": "nope"}
    with pytest.raises(ScenarioError, match=r"^train\.dispatch: must be one of \['contiguous', "):
        _rollsim.simulate(d, False)


def test_a_deployment_s_simulated_step_is_training_py_s_step_over_the_same_batch():
    from rollsim.hardware import Deployment

    d = Deployment(model="Qwen3-4B", gpu="H20", rollout_gpus=8, train_gpus=16,
                   train_options={"dispatch": "lpt", "mini_batches": 4, "recompute_logprob": True})
    sc = d.scenario(lengths=LogNormal(6.9, 0.7, 8192.0, group_correlation=0.5), prompts_per_step=64, group_size=8,
                    prompt_tokens=200.0, horizon_s=2000.0, pipeline=Synchronous())
    assert sc.train is not None and (sc.train.dp_ranks, sc.train.dispatch, sc.train.mini_batches) == (16, "lpt", 4)
    assert (sc.train_step_s, sc.train_s_per_token) == (0.0, 0.0)
    r = simulate(sc)
    step = r.steps.row(0, named=True)
    batch = r.samples.filter(r.samples["trained_step"] == 0)["length_tokens"].to_numpy() + 200.0
    assert batch.size == 512
    ph = training.train_step_s("Qwen3-4B", "H20", train_gpus=16, lengths=batch, dispatch="lpt", mini_batches=4,
                               recompute_logprob=True)
    # lpt's ranks do not depend on the batch order: the compute is the same, term for term
    assert step["rank_slowest_s"] == pytest.approx(ph["actor"] + ph["logprob"] + ph["reference"] + ph["recompute"],
                                                   rel=1e-9)
    assert step["end_s"] - step["start_s"] == pytest.approx(step["rank_slowest_s"] + 4 * sc.train.fixed_s, rel=1e-12)
    # the even-split model it replaces sees neither the imbalance nor each sequence's attention term
    even = d.scenario(lengths=sc.lengths, prompts_per_step=64, group_size=8, prompt_tokens=200.0, horizon_s=2000.0,
                      pipeline=Synchronous(), per_rank=False)
    assert even.train is None and even.train_s_per_token > 0
    assert step["rank_slowest_s"] > step["rank_mean_s"]
