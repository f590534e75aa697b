"""One field list for the CLI flags and the TOML keys (every field of Scenario, of each pipeline
class and of each length class is reachable both ways), and scenario files: exact round trips,
refusals that name the key, file and data-set references."""

import dataclasses
import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rollsim import (Empirical, FullyAsync, LengthBalanced, LogNormal, OffPolicy, OneStepAsync, Scenario,
                     ScenarioError, Synchronous, datasets)
from rollsim import cli
from rollsim.agentic import Agentic
from rollsim.train_ranks import TrainRanks
from rollsim.lengths import LengthDrift
from rollsim import scenario_toml as schema
from rollsim.sweeps import config as sweep_config
from strategies import real_scenarios, scenarios, streaming_pipelines

EXAMPLE = Path(__file__).resolve().parent.parent / "python" / "rollsim" / "examples" / "scenario.toml"


@pytest.fixture
def lengths_file(tmp_path):
    p = tmp_path / "lengths.csv"
    p.write_text("tokens,n,prompt\n100,1,a\n2000,3,a\n700,2,b\n")
    return str(p)


def from_flags(*argv, command="run"):
    a = cli.build_parser().parse_args([command, *argv])
    return cli._scenario(a)


def from_toml(doc):
    return schema.scenario_from_doc(doc)


# -------------------------------------------------------------------- every field, both ways
# One sample per field: (flags, TOML document, the value read back, the expected value). A new
# field gets its flag and key from the field list by construction; this table makes the test
# fail until a sample shows that they reach the scenario.
SCALARS = {
    "rollout_slots": ("12", 12), "decode_tokens_per_s": ("12.5", 12.5), "batch_size": ("64", 64),
    "train_step_s": ("7.5", 7.5), "horizon_s": ("100.0", 100.0), "seed": ("18446744073709551615", 2**64 - 1),
    "rng": ("python", "python"), "weight_sync_s": ("2.0", 2.0), "train_s_per_token": ("1e-05", 1e-05),
    "group_size": ("8", 8), "prompt_tokens": ("100", 100.0), "prefill_tokens_per_s": ("5000", 5000.0),
    "slots_per_instance": ("64", 64), "rollout_pause_s": ("0.3", 0.3),
    "logprob_s_per_token": ("1e-06", 1e-06), "sync_every": ("2", 2),
}
COMPANIONS = {"decode_throughput_table": ["--slots-per-instance", "64"],
              "kv_cache_tokens": ["--slots-per-instance", "64"]}


def samples(lengths_file):
    lf = lengths_file
    out = {}
    for path, (text, value) in SCALARS.items():
        out[path] = ([f"--{path.replace('_', '-')}", text], {path: value}, lambda sc, p=path: getattr(sc, p), value)
    out["prefix_sharing"] = (["--no-prefix-sharing"], {"prefix_sharing": False}, lambda sc: sc.prefix_sharing, False)
    out["clear_cache_on_update"] = (["--no-clear-cache-on-update"], {"clear_cache_on_update": False},
                                    lambda sc: sc.clear_cache_on_update, False)
    out["decode_throughput_table"] = (["--slots-per-instance", "64", "--decode-throughput-table", "1:30,64:1000"],
                                      {"slots_per_instance": 64, "decode_throughput_table": [[1, 30.0], [64, 1000.0]]},
                                      lambda sc: sc.decode_throughput_table, ((1, 30.0), (64, 1000.0)))
    out["decode_slowdown_per_seq"] = (["--slots-per-instance", "64", "--decode-slowdown-per-seq", "0.01"],
                                      {"slots_per_instance": 64, "decode_slowdown_per_seq": 0.01},
                                      lambda sc: sc.decode_slowdown_per_seq, 0.01)
    out["staleness_check"] = (["--max-staleness", "1", "--staleness-check", "finish"],
                              {"staleness_check": "finish", "pipeline": {"kind": "fully_async", "max_staleness": 1}},
                              lambda sc: sc.staleness_check, "finish")
    out["kv_cache_tokens"] = (["--slots-per-instance", "64", "--kv-cache-tokens", "50000"],
                              {"slots_per_instance": 64, "kv_cache_tokens": 50000.0},
                              lambda sc: sc.kv_cache_tokens, 50000.0)
    out["prefill_mode"] = (["--slots-per-instance", "64", "--prefill-mode", "shared"],
                           {"slots_per_instance": 64, "prefill_mode": "shared"}, lambda sc: sc.prefill_mode, "shared")
    out["max_num_batched_tokens"] = (["--slots-per-instance", "64", "--prefill-mode", "shared",
                                      "--max-num-batched-tokens", "2048"],
                                     {"slots_per_instance": 64, "prefill_mode": "shared", "max_num_batched_tokens": 2048},
                                     lambda sc: sc.max_num_batched_tokens, 2048)
    out["decode_s_per_context_token"] = (["--slots-per-instance", "64", "--decode-s-per-context-token", "1e-07"],
                                         {"slots_per_instance": 64, "decode_s_per_context_token": 1e-07},
                                         lambda sc: sc.decode_s_per_context_token, 1e-07)
    ds = datasets.by_name("deepseek-r1")
    out["lengths"] = (["--lengths", "deepseek-r1"], {"lengths": {"dataset": "deepseek-r1"}},
                      lambda sc: sc.lengths, ds)
    out["pipeline"] = (["--pipeline", "one-step"], {"pipeline": "one_step"}, lambda sc: sc.pipeline, OneStepAsync())
    # agentic: a TOML table only (no flags), see TOML_ONLY
    out["agentic"] = ([], {"agentic": {"max_turns": 3, "tool_latency_s": {"kind": "lognormal", "mu": 1.0,
                                                                          "max_s": 600.0}}},
                      lambda sc: sc.agentic, Agentic(max_turns=3, tool_latency_s=LogNormal(mu=1.0, max_tokens=600.0)))
    # train: a TOML table only (no flags), see TOML_ONLY
    out["train"] = ([], {"train": {"dp_ranks": 2, "dispatch": "balanced", "s_per_token": 1e-4}},
                    lambda sc: sc.train, TrainRanks(dp_ranks=2, dispatch="balanced", s_per_token=1e-4))
    # weight_sync: a cluster as a TOML table only, see TOML_ONLY
    from rollsim import sync

    out["weight_sync"] = ([], {"weight_sync": {"topology": "parallel", "model": {"preset": "qwen3-4b"},
                                               "infer": {"tp": 8}, "pause_s": 0.01}},
                          lambda sc: sc.weight_sync,
                          sync.WeightSync(sync.Cluster(sync.MODELS["qwen3-4b"], infer=sync.InferLayout(tp=8),
                                                       topology="parallel"), pause_s=0.01))
    out["length_drift"] = ([], {"length_drift": {"kind": "exp", "rate": 0.01, "feedback": 0.5}},
                           lambda sc: sc.length_drift, LengthDrift("exp", 0.01, feedback=0.5))
    # lengths
    lengths = lambda sc: sc.lengths  # noqa: E731
    out["lengths.kind"] = (["--lengths", "lognormal"], {"lengths": {"kind": "lognormal"}}, lengths, LogNormal())
    out["lengths.mu"] = (["--mu", "7.0"], {"lengths": {"mu": 7.0}}, lambda sc: sc.lengths.mu, 7.0)
    out["lengths.sigma"] = (["--sigma", "0.5"], {"lengths": {"sigma": 0.5}}, lambda sc: sc.lengths.sigma, 0.5)
    out["lengths.max_tokens"] = (["--lengths", lf, "--lengths-column", "tokens", "--max-tokens", "1000"],
                                 {"lengths": {"file": lf, "column": "tokens", "max_tokens": 1000.0}},
                                 lambda sc: (sc.lengths.max_tokens, sc.lengths.values.max()), (1000.0, 1000.0))
    out["lengths.group_correlation"] = (["--group-correlation", "0.5"], {"lengths": {"group_correlation": 0.5}},
                                        lambda sc: sc.lengths.group_correlation, 0.5)
    file_ = ["--lengths", lf, "--lengths-column", "tokens"]
    out["lengths.values"] = (file_, {"lengths": {"kind": "empirical", "values": [100, 2000, 700]}},
                             lambda sc: sorted(sc.lengths.values.tolist()), [100.0, 700.0, 2000.0])
    out["lengths.file"] = out["lengths.column"] = (file_, {"lengths": {"file": lf, "column": "tokens"}},
                                                   lambda sc: sc.lengths.values.tolist(), [100.0, 2000.0, 700.0])
    out["lengths.weights"] = out["lengths.count_column"] = (
        file_ + ["--count-column", "n"], {"lengths": {"file": lf, "column": "tokens", "count_column": "n"}},
        lambda sc: sc.lengths.weights.tolist(), [1.0, 3.0, 2.0])
    out["lengths.groups"] = out["lengths.group_column"] = (
        file_ + ["--group-column", "prompt"], {"lengths": {"file": lf, "column": "tokens", "group_column": "prompt"}},
        lambda sc: sc.lengths.groups.tolist(), ["a", "a", "b"])
    out["lengths.name"] = (file_ + ["--lengths-name", "mine"], {"lengths": {"file": lf, "column": "tokens",
                                                                            "name": "mine"}},
                           lambda sc: sc.lengths.name, "mine")
    out["lengths.has_header"] = (file_ + ["--has-header", "true"], {"lengths": {"file": lf, "column": "tokens",
                                                                         "has_header": True}},
                                 lambda sc: sc.lengths.values.tolist(), [100.0, 2000.0, 700.0])
    out["lengths.dataset"] = out["lengths"]
    # pipelines
    pipe = lambda sc: sc.pipeline  # noqa: E731
    out["pipeline.kind"] = (["--pipeline", "sync"], {"pipeline": {"kind": "synchronous"}}, pipe, Synchronous())
    out["pipeline.over_sampling"] = (["--pipeline", "sync", "--over-sampling", "0.5"],
                                     {"pipeline": {"kind": "synchronous", "over_sampling": 0.5}}, pipe,
                                     Synchronous(over_sampling=0.5))
    out["pipeline.keep_partial"] = (["--pipeline", "one-step", "--keep-partial"],
                                    {"pipeline": {"kind": "one_step", "keep_partial": True}}, pipe,
                                    OneStepAsync(keep_partial=True))
    out["pipeline.k"] = (["--pipeline", "k-step", "--k", "3"], {"pipeline": {"kind": "off_policy", "k": 3}}, pipe,
                         OffPolicy(3))
    for key, text, value in (("max_staleness", "2", 2), ("on_stale", "requeue", "requeue"), ("admission_eta", "1", 1),
                             ("max_lag_samples", "1024", 1024), ("max_ready_groups", "600", 600),
                             ("batch_order", "oldest_first", "oldest_first"), ("on_update", "wait", "wait")):
        out[f"pipeline.{key}"] = ([f"--{key.replace('_', '-')}", text], {"pipeline": {"kind": "fully_async", key: value}},
                                  pipe, FullyAsync(**{key: value}))
    out["pipeline.lag_release"] = (["--max-lag-samples", "1024", "--lag-release", "sync"],
                                   {"pipeline": {"kind": "fully_async", "max_lag_samples": 1024, "lag_release": "sync"}},
                                   pipe, FullyAsync(max_lag_samples=1024, lag_release="sync"))
    lb = ["--batch-order", "length_balanced"]
    for key, text, value in (("edges", "500,4000", (500.0, 4000.0)), ("quotas", "10,10,10", (10, 10, 10)),
                             ("share", "0.5", 0.5)):
        out[f"pipeline.batch_order.{key}"] = (
            lb + [f"--batch-order-{key}", text],
            {"pipeline": {"kind": "fully_async", "batch_order": {"kind": "length_balanced", key: list(value)
                                                                 if isinstance(value, tuple) else value}}},
            pipe, FullyAsync(batch_order=LengthBalanced(**{key: value})))
    return out


def test_the_field_list_is_the_classes_fields():
    paths = {f.path for f in schema.all_fields()}
    for f in dataclasses.fields(Scenario):
        assert f.name in paths
    for cls in (Synchronous, OneStepAsync, OffPolicy, FullyAsync):
        for f in dataclasses.fields(cls):
            assert not f.init or f"pipeline.{f.name}" in paths
    for f in dataclasses.fields(LengthBalanced):
        assert f"pipeline.batch_order.{f.name}" in paths
    for cls in (LogNormal, Empirical):
        for f in dataclasses.fields(cls):
            assert f.name.startswith("_") or f"lengths.{f.name}" in paths
    flags = [f.flag for f in schema.all_fields() if f.flag is not None and f.flag not in ("--lengths", "--pipeline")]
    assert len(flags) == len(set(flags)), "two fields share a flag"
    by = {f.path: f for f in schema.all_fields()}
    assert by["pipeline.admission_eta"].flag == "--admission-eta" and by["pipeline.admission_eta"].owners == ("fully_async",)
    assert by["pipeline.over_sampling"].owners == ("synchronous", "one_step", "off_policy")
    assert by["lengths.max_tokens"].owners == ("lognormal", "empirical", "file", "dataset")
    assert by["group_size"].help == "Answers per prompt (GRPO group, rollout.n)" and by["group_size"].default == 1
    assert by["pipeline.batch_order.share"].flag == "--batch-order-share" and by["lengths.column"].flag == "--lengths-column"


def test_every_field_has_a_sample(lengths_file):
    missing = {f.path for f in schema.all_fields()} - set(samples(lengths_file))
    assert not missing, f"add a sample for {sorted(missing)} to tests/test_scenario_toml.py"


FIELD_PATHS = [f.path for f in schema.all_fields()]
#: Nested option tables that scenario files set and the command line does not (its flags would be a
#: family of their own): ``[agentic]``, ``[train]``, ``[weight_sync]``, ``[length_drift]``.
TOML_ONLY = {"agentic", "train", "weight_sync", "length_drift"}


@pytest.mark.parametrize("path", FIELD_PATHS)
def test_every_field_is_a_flag_and_a_toml_key(path, lengths_file):
    argv, doc, get, want = samples(lengths_file)[path]
    f = next(f for f in schema.all_fields() if f.path == path)
    if path in TOML_ONLY:
        assert get(from_toml(doc)) == want and get(sweep_config.parse({"base": doc}).base) == want
        return
    if f.flag is not None:
        assert f.flag in argv or f.flag.replace("--", "--no-", 1) in argv
    else:  # Empirical's arrays: from the file's columns
        assert path.startswith("lengths.") and schema.FROM_FILE[f.key]
    got_flag = get(from_flags(*argv))
    got_toml = get(from_toml(doc))
    assert got_flag == want and got_toml == want
    # the key is accepted in a sweep's base too (same reader), and the flag in a sweep-free command
    base = sweep_config.parse({"base": doc}).base
    assert get(base) == want


def test_every_scenario_flag_is_in_every_scenario_command():
    import argparse

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("run", "compare", "presets", "split"):
        flags = {s for a in sub.choices[command]._actions for s in a.option_strings}
        for f in schema.scenario_fields():
            if f.path not in ("lengths", "pipeline", *TOML_ONLY):
                assert f.flag in flags, (command, f.flag)
        for f in schema.lengths_fields():
            assert f.flag is None or f.flag in flags, (command, f.flag)
    run_flags = {s for a in sub.choices["run"]._actions for s in a.option_strings}
    assert {f.flag for f in schema.pipeline_fields()} <= run_flags


def test_old_spellings_still_work(lengths_file):
    sc = from_flags("--lengths", "lognormal", "--mu", "7", "--sigma", "0.8", "--max-tokens", "8192",
                    "--pipeline", "k-step", "--k", "2")
    assert sc.lengths == LogNormal(7.0, 0.8, 8192.0) and sc.pipeline == OffPolicy(2)
    assert from_flags("--max-staleness", "3").pipeline == FullyAsync(3)
    assert from_flags("--pipeline", "fully_async", "--max-staleness", "none").pipeline == FullyAsync()
    assert from_flags(command="compare").rng == "python" and from_flags().rng == "fast"
    sc = from_flags(command="presets")
    assert (sc.group_size, sc.prompt_tokens, sc.prefill_tokens_per_s) == (8, 500.0, 10000.0)


# -------------------------------------------------------------------- round trips


@st.composite
def everything(draw):
    """Scenarios using instances, tables, KV capacity, balanced batches and every kind of lengths."""
    spi = draw(st.sampled_from([0, 4, 8]))
    slots = spi * draw(st.integers(1, 4)) if spi else draw(st.integers(1, 32))
    v = draw(st.floats(5.0, 100.0))
    table = None
    if spi and draw(st.booleans()):
        table = ((1, v), (spi, v * spi * draw(st.floats(0.2, 1.0))))
    values = draw(st.lists(st.integers(1, 20000), min_size=2, max_size=12))
    lengths = draw(st.one_of(
        st.builds(LogNormal, mu=st.floats(5.0, 8.0), sigma=st.floats(0.0, 1.4),
                  max_tokens=st.floats(1.0, 40000.0), group_correlation=st.floats(0.0, 0.99)),
        st.builds(Empirical, values=st.just(values), weights=st.none() | st.just([float(i % 3 + 1) for i in values]),
                  max_tokens=st.none() | st.floats(1.0, 30000.0),
                  name=st.none() | st.text(max_size=8).filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s))),
        st.builds(Empirical, values=st.just(values), groups=st.just([i % 3 for i in values]) | st.just(
            [chr(97 + i % 2) for i in values])),
    ))
    group = draw(st.sampled_from([1, 2, 4]))
    order = draw(st.sampled_from(["fifo", "oldest_first", "balanced"]))
    pipe = draw(st.one_of(
        st.builds(FullyAsync, max_staleness=st.none() | st.integers(0, 4), on_update=st.sampled_from(
            ["continue", "abort_drop", "wait", "keep_stale"]), admission_eta=st.none() | st.integers(0, 3),
            batch_order=st.just(LengthBalanced((1e9,), share=0.5) if order == "balanced" else order)),
        st.builds(Synchronous, over_sampling=st.none() | st.floats(0.0, 3.0) | st.just(math.inf),
                  keep_partial=st.booleans()),
        st.builds(OffPolicy, k=st.integers(0, 5)),
    ))
    kv = None
    if spi and draw(st.booleans()):
        kv = 200_000.0 + draw(st.floats(0.0, 1e6))
    return Scenario(rollout_slots=slots, slots_per_instance=spi, decode_tokens_per_s=v, decode_throughput_table=table,
                    decode_slowdown_per_seq=0.0 if table or not spi else draw(st.floats(0.0, 0.1)), kv_cache_tokens=kv,
                    batch_size=group * draw(st.integers(1, 16)), group_size=group, lengths=lengths, pipeline=pipe,
                    train_step_s=draw(st.floats(0.0, 1e4)), weight_sync_s=draw(st.floats(0.0, 10.0)),
                    train_s_per_token=draw(st.floats(0.0, 1e-3)), logprob_s_per_token=draw(st.floats(0.0, 1e-3)),
                    rollout_pause_s=draw(st.floats(0.0, 5.0)), horizon_s=draw(st.floats(1e-3, 1e7)),
                    prompt_tokens=draw(st.floats(0.0, 1000.0)),
                    prefill_tokens_per_s=draw(st.just(math.inf) | st.floats(1.0, 1e6)),
                    prefix_sharing=draw(st.booleans()), clear_cache_on_update=draw(st.booleans()),
                    seed=draw(st.integers(0, 2**64 - 1)), rng=draw(st.sampled_from(["fast", "python"])))


@given(st.one_of(scenarios(), real_scenarios(), real_scenarios(pipeline=streaming_pipelines()), everything()))
def test_to_toml_round_trips_exactly(sc):
    text = sc.to_toml()
    back = Scenario.from_toml_str(text)
    assert back == sc
    assert back.to_dict().keys() == sc.to_dict().keys()
    assert back.to_toml() == text


def test_round_trip_through_a_file(tmp_path):
    sc = Scenario(pipeline=FullyAsync(2, batch_order=LengthBalanced((800.0, 4000.0), quotas=(10, 0, 0))),
                  lengths=Empirical([3.0, 5.0, 9.5], [1.0, 0.0, 2.0], max_tokens=9.0, name='a "quoted"\nname\x7f'))
    path = tmp_path / "s.toml"
    assert sc.to_toml(path) == path.read_text(encoding="utf-8")
    assert Scenario.from_toml(path) == sc
    text = path.read_text()
    assert 'name = "a \\"quoted\\"\\nname\\u007f"' in text and "quotas = [10, 0, 0]" in text


def test_file_and_dataset_lengths_are_written_as_references(tmp_path, lengths_file):
    (tmp_path / "sub").mkdir()
    os.replace(lengths_file, tmp_path / "sub" / "l.csv")
    f = tmp_path / "s.toml"
    f.write_text('[lengths]\nfile = "sub/l.csv"\ncolumn = "tokens"\ncount_column = "n"\nmax_tokens = 1500\n')
    sc = Scenario.from_toml(f)
    assert sc.lengths.values.tolist() == [100.0, 1500.0, 700.0] and sc.lengths.name == "l.csv"
    text = sc.to_toml()
    assert f'file = "{tmp_path / "sub" / "l.csv"}"' in text and "values" not in text
    assert Scenario.from_toml_str(text) == sc
    # a data set, whether read by name or built in Python, is written by name
    for lengths in (datasets.deepseek_r1_serving(16384), Scenario.from_toml_str(
            '[lengths]\ndataset = "deepseek-r1"\nmax_tokens = 16384').lengths):
        text = Scenario(lengths=lengths).to_toml()
        assert 'dataset = "deepseek-r1"' in text and len(text) < 2000
        assert Scenario.from_toml_str(text).lengths == lengths
    # any other Empirical is written inline, exactly
    e = Empirical(np.array([1.5, 2.25, 1e-3]))
    assert "values = [1.5, 2.25, 0.001]" in Scenario(lengths=e).to_toml()


def test_the_example_file(capsys):
    sc = Scenario.from_toml(EXAMPLE)
    assert sc == Scenario(rng="python")
    assert cli.main(["compare", str(EXAMPLE), "--format", "json"]) == 0
    import json

    assert [r["steps"] for r in json.loads(capsys.readouterr().out)] == [11, 12, 34, 33]  # the chapter's table


def test_a_scenario_file_with_every_option_runs(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text("""
rollout_slots = 64
slots_per_instance = 16
decode_throughput_table = [[1, 30.0], [16, 240.0]]
kv_cache_tokens = 60000.0
group_size = 4
batch_size = 64
prompt_tokens = 200.0
prefill_tokens_per_s = 5000.0
horizon_s = 1200.0
[lengths]
kind = "lognormal"
max_tokens = 8192.0
group_correlation = 0.3
[pipeline]
kind = "fully_async"
admission_eta = 1
on_update = "abort_resubmit"
batch_order = { kind = "length_balanced", edges = [2000.0], share = 0.8 }
""")
    sc = Scenario.from_toml(f)
    assert sc.pipeline == FullyAsync(admission_eta=1, on_update="abort_resubmit",
                                     batch_order=LengthBalanced((2000.0,), share=0.8))
    assert sc.decode_throughput_table == ((1, 30.0), (16, 240.0)) and sc.lengths.group_correlation == 0.3
    assert cli.main(["run", str(f)]) == 0
    assert '"steps":' in capsys.readouterr().out


# -------------------------------------------------------------------- refusals


@pytest.mark.parametrize("text, message", [
    ("foo = 1", "foo: unknown key (allowed: ['agentic', 'batch_size', 'clear_cache_on_update', "),
    ("[pipeline]\nkind = 'fully_async'\ncap = 2", "pipeline.cap: unknown key (allowed: ['admission_eta', 'batch_order', "
                                                  "'kind', 'lag_release', 'max_lag_samples', 'max_ready_groups', 'max_staleness', "
                                                  "'on_stale', 'on_update'])"),
    ("[pipeline]\nkind = 'synchronous'\nk = 2", "pipeline.k: applies to kind 'off_policy' only, not 'synchronous'"),
    ("[pipeline]\nkind = 'synchronous'\nmax_staleness = 2",
     "pipeline.max_staleness: applies to kind 'fully_async' only, not 'synchronous'"),
    ("[pipeline]\nkind = 'fully_async'\nover_sampling = 2",
     "pipeline.over_sampling: applies to kind 'synchronous' or 'one_step' or 'off_policy' only, not 'fully_async'"),
    ("[pipeline]\nkind = 'synchronous'\nk2 = 2", "pipeline.k2: unknown key (allowed: ['keep_partial', 'kind', "
                                                 "'over_sampling'])"),
    ("[pipeline]\nmax_staleness = 2", "pipeline.kind: must be 'synchronous', 'one_step', 'off_policy' or "
                                      "'fully_async', got None"),
    ("[lengths]\nmu = 7\nvalues = [1]", "lengths.values: unknown key (allowed: ['group_correlation', 'kind', "
                                        "'max_tokens', 'mu', 'sigma'])"),
    ("[lengths]\ndataset = 'deepseek-r1'\ncolumn = 'x'", "lengths.column: unknown key (allowed: ['dataset', "
                                                         "'max_tokens'])"),
    ("[pipeline]\nkind = 'fully_async'\nbatch_order = { kind = 'fifo' }",
     "pipeline.batch_order.kind: must be 'length_balanced' in a batch_order table, got 'fifo'"),
    ("[pipeline]\nkind = 'fully_async'\nbatch_order = { edges = [1.0], cap = 1 }",
     "pipeline.batch_order.cap: unknown key (allowed: ['edges', 'kind', 'quotas', 'share'])"),
    ("rollout_slots = 1" + "0" * 400, "rollout_slots: must be an integer of at most 20 digits, got one of 401 digits"),
    ("seed = 18446744073709551616", "seed: must be an integer in [0, 2**64 - 1], got 2**64"),
    ("[lengths]\nkind = 'empirical'\nvalues = [1, 1" + "0" * 399 + "]",
     "lengths.values[1]: must be an integer of at most 20 digits, got one of 400 digits"),
    ("horizon_s = 1e400", "horizon_s: must be in [1e-6, 1e12] seconds, got inf"),
    ("rollout_slots = [", "text: the text is not valid TOML: "),
    ("lengths = 3", "lengths: must be a table, got int 3"),
])
def test_bad_scenario_text(text, message):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_toml_str(text)
    assert str(e.value).startswith(message), str(e.value)


def test_bad_scenario_files(tmp_path):
    with pytest.raises(ScenarioError, match=r"^scenario file: '.*' is a directory, not a TOML file$"):
        Scenario.from_toml(tmp_path)
    fifo = tmp_path / "f.toml"
    os.mkfifo(fifo)
    with pytest.raises(ScenarioError, match=r"^scenario file: '.*f\.toml' is not a regular file$"):
        Scenario.from_toml(fifo)  # refused without blocking on the FIFO
    bad = tmp_path / "latin1.toml"
    bad.write_bytes("name = 'caf\xe9'".encode("latin-1"))
    with pytest.raises(ScenarioError, match=r"^scenario file: '.*latin1\.toml' is not UTF-8 text \(line 1, byte offset 11: b'\\xe9'\)$"):
        Scenario.from_toml(bad)
    with pytest.raises(FileNotFoundError):
        Scenario.from_toml(tmp_path / "none.toml")
    lengths_fifo = tmp_path / "l.csv"
    os.mkfifo(lengths_fifo)
    with pytest.raises(ScenarioError, match=r"^lengths.path: must be a regular file, got a FIFO \(named pipe\) '.*l\.csv'$"):
        Scenario.from_toml_str(f'[lengths]\nfile = "{lengths_fifo}"')  # no blocking read either
    bom = tmp_path / "bom.toml"  # a UTF-8 byte-order mark (Windows editors) is skipped
    bom.write_bytes(b"\xef\xbb\xbfrollout_slots = 8\r\n")
    assert Scenario.from_toml(bom) == Scenario(rollout_slots=8)
    assert Scenario.from_toml_str("\ufeffrollout_slots = 8") == Scenario(rollout_slots=8)


def test_to_toml_refuses_what_toml_cannot_hold():
    with pytest.raises(ScenarioError, match=r"^lengths.groups\[0\]: cannot be written to TOML: bytes b'a'$"):
        Scenario(lengths=Empirical([1.0, 2.0], groups=[b"a", b"b"])).to_toml()
    with pytest.raises(ScenarioError, match="lone surrogate"):
        Scenario(lengths=Empirical([1.0], name="\udcff")).to_toml()


FUZZ_KEYS = st.sampled_from(["rollout_slots", "lengths", "pipeline", "kind", "mu", "values", "weights", "groups",
                             "file", "dataset", "max_tokens", "k", "batch_order", "edges", "quotas", "share",
                             "on_update", "decode_throughput_table", "kv_cache_tokens", "slots_per_instance", "foo",
                             "fully_async", "length_balanced", "seed", "over_sampling", "name", "group_column"])
FUZZ_SCALARS = st.one_of(st.sampled_from([-1, 0, 1, 2, 8, 2**64, 10**25, -(10**30)]),
                         st.sampled_from([math.nan, math.inf, 0.5, 30.0, 1e308]), st.booleans(),
                         st.sampled_from(["", "fully_async", "off_policy", "lognormal", "empirical", "fifo",
                                          "length_balanced", "deepseek-r1", "x.csv", "wait"]))
FUZZ_DOCS = st.dictionaries(FUZZ_KEYS, st.recursive(FUZZ_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(FUZZ_KEYS, inner, max_size=3)), max_leaves=8), max_size=4)


@given(FUZZ_DOCS)
def test_random_documents_are_built_or_refused_cleanly(doc):
    try:
        sc = schema.scenario_from_doc(doc)
    except (ValueError, FileNotFoundError):
        return
    assert Scenario.from_toml_str(sc.to_toml()) == sc
