"""Fuzzing (hypothesis) of scenario loading and the length-file readers: zero crashes, every failure a
clean ValueError (ScenarioError is one) or FileNotFoundError. Any other exception, including a
Rust or polars panic (pyo3_runtime.PanicException, a BaseException), fails the test."""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import tempfile
import warnings

import numpy as np
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rollsim
from rollsim import Empirical, FullyAsync, LengthBalanced, LogNormal, OffPolicy, Scenario, Synchronous, simulate
from rollsim.sweeps import config as sweep_config
from rollsim.sync import cluster_from_dict, load_cluster

CLEAN = (ValueError, FileNotFoundError, rollsim.RunLimitError)
FUZZ = settings(max_examples=int(os.environ.get("ROLLSIM_FUZZ_EXAMPLES", "150")), deadline=None, suppress_health_check=list(HealthCheck))

SCALARS = st.one_of(
    st.sampled_from([-1, 0, 1, 2, 3, 7, 8, 64, 512, 2**24, 2**24 + 1, 2**32, 2**64, 10**20, -(2**63)]),
    st.sampled_from([math.nan, math.inf, -math.inf, -1.0, 0.0, 1e-300, 0.5, 1.0, 60.0, 7.6, 1e9, 1e300]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.sampled_from(["", "fast", "python", "fifo", "oldest_first", "drop", "requeue", "wait", "lognormal",
                     "empirical", "fully_async", "off_policy", "synchronous", "one_step", "deepseek-r1",
                     "relay", "naive", "h100", "ideal", "qwen3-4b", "deepseek-v3", "bf16", "fp8:128", "x"]),
    st.text(max_size=8),
)
NUMPY = st.sampled_from([np.int64(3), np.int8(-3), np.uint64(2**64 - 1), np.float32(1.5), np.float64(math.nan),
                         np.bool_(True), np.array([1.0, 2.0]), np.zeros((2, 2))])
PARTS = st.sampled_from([LogNormal(), LogNormal(5.0, 0.0), Empirical([100.0, 2000.0]), Synchronous(), OffPolicy(2),
                         FullyAsync(2), FullyAsync(admission_eta=1), FullyAsync(batch_order=LengthBalanced()),
                         LengthBalanced(), Scenario])
VALUES = st.recursive(st.one_of(SCALARS, NUMPY, PARTS),
                      lambda inner: st.one_of(st.lists(inner, max_size=4),
                                              st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=8)

FIELDS = [f for f in Scenario.__dataclass_fields__ if not f.startswith("_")]
SUBFIELDS = ["pipeline.max_staleness", "pipeline.k", "pipeline.on_update", "pipeline.batch_order",
             "pipeline.batch_order.edges", "pipeline.admission_eta", "pipeline.max_lag_samples",
             "pipeline.max_ready_groups", "pipeline.over_sampling", "pipeline.keep_partial", "lengths.mu",
             "lengths.sigma", "lengths.max_tokens", "lengths.values", "lengths.weights", "lengths.groups",
             "lengths.group_correlation", "lengths._hash", "seed.x", "lengths.", ".", "", "a.b.c", "pipeline.x"]
KEYS = st.one_of(st.sampled_from(FIELDS), st.sampled_from(SUBFIELDS), st.text(max_size=6))


def run_clean(fn, *args, **kwargs):
    """``fn(...)``; a ValueError / FileNotFoundError is a clean refusal, anything else propagates."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)
    except CLEAN:
        return None


def try_run(sc):
    """A scenario that constructs also runs, or is refused cleanly (the limit bounds the time)."""
    if isinstance(sc, Scenario):
        res = run_clean(simulate, sc, record="summary", max_samples=100_000)
        if res is not None:
            assert res.summary["samples_started"] <= 100_000


@FUZZ
@given(st.dictionaries(st.sampled_from(FIELDS + ["foo", "_hash"]), VALUES, max_size=5))
def test_scenario_from_random_kwargs(kwargs):
    try_run(run_clean(lambda: Scenario(**kwargs)))


@FUZZ
@given(st.lists(VALUES, max_size=17))
def test_scenario_from_random_positional_arguments(args):
    run_clean(lambda: Scenario(*args))


@FUZZ
@given(st.sampled_from([Scenario(horizon_s=600.0), Scenario(horizon_s=600.0, pipeline=Synchronous()),
                        Scenario(horizon_s=600.0, lengths=Empirical([100.0, 3000.0]))]),
       st.dictionaries(KEYS, VALUES, max_size=4))
def test_replace_with_random_dotted_keys(base, changes):
    try_run(run_clean(lambda: base.replace(**changes)))


@FUZZ
@given(st.sampled_from([LogNormal, Empirical, Synchronous, OffPolicy, FullyAsync, LengthBalanced]),
       st.lists(VALUES, max_size=3), st.dictionaries(st.text(max_size=8) | st.sampled_from(
           ["mu", "sigma", "max_tokens", "values", "weights", "groups", "name", "k", "over_sampling", "max_staleness",
            "on_update", "batch_order", "edges", "quotas", "share"]), VALUES, max_size=3))
def test_parts_from_random_arguments(cls, args, kwargs):
    run_clean(lambda: cls(*args, **kwargs))


# ------------------------------------------------------------------ sweep TOML


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


def toml_text(doc: dict) -> str:
    top = [f"{json.dumps(k)} = {toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    tables = [f"[{json.dumps(k)}]\n" + "\n".join(f"{json.dumps(kk)} = {toml_value(vv)}" for kk, vv in v.items())
              for k, v in doc.items() if isinstance(v, dict)]
    return "\n".join(top + tables) + "\n"


TOML_SCALARS = st.one_of(
    st.sampled_from([-1, 0, 1, 2, 3, 8, 512, 2**24 + 1, 2**63 - 1, -(2**63)]),
    st.sampled_from([math.nan, math.inf, -1.0, 0.0, 0.5, 30.0, 7200.0, 1e300]),
    st.booleans(),
    st.sampled_from(["", "fast", "lognormal", "empirical", "fully_async", "off_policy", "synchronous", "one_step",
                     "deepseek-r1", "latin_hypercube", "random", "lengths.csv", "x"]),
)
TOML_KEYS = st.sampled_from(
    ["base", "grid", "sample", "seeds", "metrics", "chunk_size", "max_samples", "kind", "mu", "sigma", "max_tokens",
     "values", "weights", "file", "column", "dataset", "k", "max_staleness", "start", "count", "method", "n", "seed",
     "space", "uniform", "log_uniform", "int_uniform", "choice", "rollout_slots", "batch_size", "train_step_s",
     "horizon_s", "lengths", "pipeline", "rng", "pipeline.max_staleness", "lengths.sigma", "foo"])
TOML_VALUES = st.recursive(TOML_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(TOML_KEYS, inner, max_size=3)), max_leaves=10)
TOML_DOCS = st.dictionaries(TOML_KEYS, TOML_VALUES, max_size=5)


@FUZZ
@given(TOML_DOCS)
def test_sweep_config_from_random_documents(doc):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "lengths.csv"), "w") as f:
            f.write("tokens\n100\n2000\n")
        spec = run_clean(sweep_config.parse, doc, d)
        path = os.path.join(d, "s.toml")
        with open(path, "w") as f:
            f.write(toml_text(doc))
        loaded = run_clean(sweep_config.load, path)
        if spec is not None and loaded is not None:
            assert loaded.base == spec.base and loaded.seeds == spec.seeds


@FUZZ
@given(st.text(max_size=200) | st.sampled_from(["[base", "seeds = ", "[grid]\nx = [1, 'a'", "a = 1\na = 2",
                                                 "\x00", "[[base]]\nx = 1"]))
def test_sweep_config_from_random_text(text):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.toml")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(text)
        run_clean(sweep_config.load, path)


# ------------------------------------------------------------------ sync cluster

CLUSTER_KEYS = st.sampled_from(
    ["topology", "fanout", "model", "train", "infer", "hardware", "software", "preset", "params", "tensors", "layers",
     "train_precision", "infer_precision", "tp", "pp", "dp", "ep", "fsdp", "instances", "gpus_per_node",
     "nic_bytes_per_s", "nvlink_bytes_per_s", "efficiency", "per_tensor_s", "colocated", "name", "foo"])
CLUSTER_VALUES = st.recursive(TOML_SCALARS | st.sampled_from(["relay", "qwen3-4b", "h100", "ideal", "bf16", "fp8:128"]),
                              lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(CLUSTER_KEYS, inner, max_size=4)),
                              max_leaves=12)


@FUZZ
@given(st.dictionaries(CLUSTER_KEYS, CLUSTER_VALUES, max_size=6) | VALUES)
def test_cluster_from_random_dicts(d):
    run_clean(cluster_from_dict, d)


@FUZZ
@given(st.dictionaries(CLUSTER_KEYS, CLUSTER_VALUES, max_size=6))
def test_cluster_files_from_random_documents(doc):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "c.toml")
        with open(path, "w") as f:
            f.write(toml_text(doc))
        run_clean(load_cluster, path)


# ------------------------------------------------------------------ length files


def valid_parquet() -> bytes:
    buf = io.BytesIO()
    pl.DataFrame({"tokens": [100.0, 2000.0, 9000.0] * 50, "n": [1, 2, 3] * 50}).write_parquet(buf)
    return buf.getvalue()


PARQUET = valid_parquet()


@st.composite
def corrupted(draw, data: bytes):
    b = bytearray(data)
    for _ in range(draw(st.integers(1, 8))):
        i = draw(st.integers(0, len(b) - 1))
        b[i] = draw(st.integers(0, 255))
    cut = draw(st.integers(0, len(b)))
    return bytes(b[:cut]) if draw(st.booleans()) else bytes(b)


CSV_TEXT = st.lists(st.sampled_from(["tokens", "n", ",", "\n", "100", "0", "-1", "nan", "inf", "1e400", "abc", '"',
                                     " ", "2000.5", ";", "\t", "\r\n", "\x00", "é"]), max_size=40).map("".join)


@FUZZ
@given(st.one_of(st.binary(max_size=300).map(lambda b: (".csv", b)),
                 CSV_TEXT.map(lambda t: (".csv", t.encode("utf-8"))),
                 CSV_TEXT.map(lambda t: (".csv.gz", gzip.compress(t.encode("utf-8")))),
                 st.binary(max_size=300).map(lambda b: (".csv.gz", b)),
                 st.binary(max_size=300).map(lambda b: (".parquet", b)),
                 corrupted(PARQUET).map(lambda b: (".parquet", b))),
       st.sampled_from([None, "tokens", "n", "x"]), st.sampled_from([None, "n", "tokens"]))
def test_length_files_from_random_bytes(file, column, count_column):
    suffix, data = file
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "lengths" + suffix)
        with open(path, "wb") as f:
            f.write(data)
        emp = run_clean(Empirical.from_file, path, column, count_column)
        if emp is not None:
            assert emp.values.size >= 1 and np.isfinite(emp.values).all() and (emp.values > 0).all()
            try_run(Scenario(horizon_s=600.0, lengths=emp))


def test_missing_length_file_is_file_not_found(tmp_path):
    try:
        Empirical.from_file(tmp_path / "none.parquet")
    except FileNotFoundError as e:
        assert str(e) == f"lengths file not found: {tmp_path / 'none.parquet'}"
    else:
        raise AssertionError("no error")
