"""Checks every run must pass, shared by the property tests of the decode, KV-cache and pause
models."""

import math
import warnings

import polars as pl

from rollsim import Result, Scenario, simulate


def run_quiet(sc: Scenario) -> Result:
    """Simulates ``sc`` with per-sample rows, ignoring the warnings of outrunning scenarios."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return simulate(sc)


def assert_conserved(res: Result) -> None:
    """Samples and tokens are conserved, utilization is in [0, 1], every finish comes after its
    start, and the token spans of every finished answer end at its length."""
    s, df = res.summary, res.samples
    assert s["samples_started"] == s["samples_trained"] + s["samples_dropped"] + s["samples_ready"] + s["samples_in_flight"]
    total = s["tokens_trained"] + s["tokens_wasted"] + s["tokens_pending"]
    assert math.isclose(s["tokens_generated"], total, rel_tol=1e-9, abs_tol=1e-6)
    assert 0.0 <= s["rollout_utilization"] <= 1.0 + 1e-12
    done = df.filter(pl.col("finish_s").is_not_null())
    assert (done["finish_s"] >= done["start_s"]).all()
    seg = res.segments.group_by("sample_id").agg(pl.col("last_token").max().alias("last"),
                                                 pl.col("first_token").min().alias("first"))
    fin = done.filter(~pl.col("aborted")).join(seg, on="sample_id")
    if fin.height:
        assert ((fin["last"] - fin["length_tokens"]).abs() <= 1e-6 * max(1.0, fin["length_tokens"].max())).all()
        assert (fin["first"] == 0).all()
