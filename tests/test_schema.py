"""The engine's schema (rust/rollsim-core/src/schema.rs, ``rollsim._rollsim.SCHEMA``) is the one
source of the scenario's fields and of the result columns: every derived thing equals it (the
Scenario dataclass's fields and defaults, the range checks, the wire dict's keys and defaults, the
command-line flags, the TOML keys, the docs pages, the summary and frame columns), and the
formulas both sides use are the engine's."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
import typing
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from rollsim import (Agentic, Empirical, FullyAsync, LengthDrift, LogNormal, Scenario, ScenarioError, TrainRanks,
                     _rollsim, simulate)
from rollsim import scenario as scenario_mod
from rollsim import cli, scenario_toml, simulation
from rollsim._check import fmt_bound
from rollsim.cli import build_parser

# the cross-checks of fields and columns run short horizons, often without a training step
pytestmark = pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = _rollsim.SCHEMA
FIELDS = {f["name"]: f for f in SCHEMA["scenario"]}
TINY = {"horizon_s": 60.0}


def test_schema_is_plain_data():
    def plain(x):
        if isinstance(x, dict):
            return all(isinstance(k, str) and plain(v) for k, v in x.items())
        if isinstance(x, list):
            return all(plain(v) for v in x)
        return x is None or isinstance(x, (str, float, int, bool))

    assert plain(SCHEMA) and SCHEMA["version"] == 1
    for f in SCHEMA["scenario"]:
        assert set(f) == {"name", "kind", "unit", "default", "required", "lo", "hi", "lo_open", "hi_open", "range",
                          "extra", "suffix", "choices", "omit_at_default", "doc"}
        assert f["doc"] and "\n" not in f["doc"], f["name"]


def test_the_dataclass_fields_are_the_schema_s_plus_the_python_only_ones():
    names = [f.name for f in dataclasses.fields(Scenario)]
    assert names == [f["name"] for f in SCHEMA["scenario"]] + list(scenario_mod.PYTHON_ONLY)
    assert set(scenario_mod.PYTHON_ONLY).isdisjoint(FIELDS)


def test_the_dataclass_defaults_are_the_schema_s():
    sc = Scenario()
    for f in SCHEMA["scenario"]:
        got = getattr(sc, f["name"])
        if f["kind"] == "part" and f["default"] is None:
            assert got is None, f["name"]
        elif f["kind"] == "part":
            assert f"{type(got).__name__}()" == f["default"] and got == type(got)(), f["name"]
        else:
            assert type(got) is type(f["default"]) and got == f["default"], f["name"]


def test_the_range_checks_are_the_schema_s():
    bounds = {n: (f["lo"], f["hi"], f["unit"]) for n, f in FIELDS.items() if f["kind"] in ("float", "table")}
    assert scenario_mod._BOUNDS == bounds
    for name, f in FIELDS.items():
        if f["kind"] in ("float", "table", "int"):
            hi = "2**64 - 1" if f["hi"] == 2**64 - 1 else fmt_bound(f["hi"])
            assert f["range"] == f"[{fmt_bound(f['lo'])}, {hi}]", name
    assert scenario_mod.MAX_COUNT == FIELDS["rollout_slots"]["hi"] == 2**24


@pytest.mark.parametrize("name", ["rollout_slots", "batch_size", "group_size", "slots_per_instance"])
def test_integer_ranges_are_refused_alike_by_python_and_the_engine(name):
    lo, hi = FIELDS[name]["lo"], FIELDS[name]["hi"]
    for bad in (lo - 1, hi + 1):
        want = f"{name}: must be in [{lo}, {hi}], got {bad}"
        with pytest.raises(ScenarioError) as e:
            Scenario(**{name: bad})
        assert str(e.value) == want
        d = Scenario(**TINY).to_dict()
        d[name] = bad
        with pytest.raises(ScenarioError) as e:  # never OverflowError
            _rollsim.simulate(d, False)
        assert str(e.value) == want


def test_the_wire_dict_s_keys_and_defaults_are_the_schema_s():
    assert scenario_mod._ENGINE_DEFAULTS == {n: f["default"] for n, f in FIELDS.items() if f["omit_at_default"]}
    assert set(Scenario().to_dict()) == {n for n, f in FIELDS.items() if not f["omit_at_default"]}
    every = Scenario(weight_sync_s=1.0, logprob_s_per_token=1e-6, train_s_per_token=1e-6, group_size=2,
                     prompt_tokens=10.0, prefill_tokens_per_s=1e4, prefix_sharing=False, clear_cache_on_update=False,
                     slots_per_instance=8, decode_slowdown_per_seq=0.01, rollout_pause_s=1.0,
                     kv_cache_tokens=1e6, sync_every=2, staleness_check="finish",
                     pipeline=FullyAsync(max_staleness=1))
    shared = Scenario(slots_per_instance=8, prefill_mode="shared", max_num_batched_tokens=64,
                      decode_s_per_context_token=1e-7).to_dict()
    assert set(every.to_dict()) | set(shared) == set(FIELDS) - {"decode_throughput_table", "agentic", "train", "length_drift"}
    assert "agentic" in Scenario(agentic=Agentic()).to_dict()
    assert "train" in Scenario(train=TrainRanks()).to_dict()
    assert "length_drift" in Scenario(length_drift=LengthDrift()).to_dict()


def test_missing_keys_take_the_schema_s_defaults_in_the_engine():
    d = Scenario().to_dict()
    full = _rollsim.simulate(d, False)["summary"]
    minimal = _rollsim.simulate({"lengths": d["lengths"], "pipeline": d["pipeline"]}, False)["summary"]
    assert repr(full) == repr(minimal)  # (NaN-aware)


def test_weight_sync_and_logprob_cross_as_their_own_fields():
    sc = Scenario(train_step_s=50.0, weight_sync_s=10.0, train_s_per_token=1e-5, logprob_s_per_token=2e-5, **TINY)
    d = sc.to_dict()
    assert (d["train_step_s"], d["weight_sync_s"], d["train_s_per_token"], d["logprob_s_per_token"]) == (
        50.0, 10.0, 1e-5, 2e-5)
    desc = sc.describe()
    assert {k: desc[k] for k in ("train_step_s", "weight_sync_s", "train_s_per_token", "logprob_s_per_token")} == {
        "train_step_s": 50.0, "weight_sync_s": 10.0, "train_s_per_token": 1e-5, "logprob_s_per_token": 2e-5}
    summed = Scenario(train_step_s=60.0, train_s_per_token=1e-5 + 2e-5, **TINY)
    assert simulate(sc).steps.equals(simulate(summed).steps)  # the engine adds them to the step
    assert "weight_sync_s" not in Scenario().to_dict()  # omitted at its default


def test_kv_cache_tokens_zero_has_one_meaning_refused():
    want = "kv_cache_tokens: must be in [1, 1e15] tokens, or None (unlimited), got 0"
    with pytest.raises(ScenarioError) as e:
        Scenario(kv_cache_tokens=0, slots_per_instance=8)
    assert str(e.value) == want
    d = Scenario(slots_per_instance=8, **TINY).to_dict()
    d["kv_cache_tokens"] = 0.0
    with pytest.raises(ScenarioError) as e:
        _rollsim.simulate(d, False)
    assert str(e.value) == want + ".0"
    d["kv_cache_tokens"] = None  # None (or no key): unlimited
    a = _rollsim.simulate(d, False)["summary"]
    del d["kv_cache_tokens"]
    assert repr(a) == repr(_rollsim.simulate(d, False)["summary"])
    stub = (ROOT / "python" / "rollsim" / "_rollsim.pyi").read_text(encoding="utf-8")
    assert "(None: unlimited; 0 is refused)" in stub


def test_the_cli_flags_are_the_schema_s():
    parser = build_parser()
    run = next(a for a in parser._subparsers._group_actions[0].choices.values() if a.prog.endswith(" run"))
    flags = {o for a in run._actions for o in a.option_strings}
    for name in FIELDS:
        if name not in cli.TOML_ONLY:
            assert ("--" + name.replace("_", "-")) in flags, name
    assert set(cli.TOML_ONLY) <= set(FIELDS) | set(scenario_mod.PYTHON_ONLY)


def test_the_toml_keys_are_the_schema_s():
    assert [f.path for f in scenario_toml.scenario_fields()] == list(FIELDS) + list(scenario_mod.PYTHON_ONLY)
    for f in scenario_toml.scenario_fields():
        if f.path in FIELDS:
            assert f.help, f.path
    with pytest.raises(ScenarioError, match=r"^nope: unknown key \(allowed: \[") as e:
        Scenario.from_toml_str("nope = 1")
    for name in FIELDS:
        assert repr(name) in str(e.value)
    sc = Scenario(weight_sync_s=2.0, logprob_s_per_token=1e-6, slots_per_instance=8, kv_cache_tokens=1e6,
                  decode_throughput_table=((1, 30.0), (8, 200.0)))
    assert Scenario.from_toml_str(sc.to_toml()) == sc


def test_the_docs_pages_are_current():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_schema_doc.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    page = (ROOT / "docs" / "scenario.md").read_text(encoding="utf-8")
    for name in FIELDS:
        assert f"| `{name}` |" in page
    results = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    for c in SCHEMA["summary"]:
        assert f"| `{c['name']}` |" in results


def test_the_summary_and_frame_columns_are_the_schema_s():
    raw = _rollsim.simulate(Scenario(**TINY).to_dict(), True)
    assert list(raw["summary"]) == [c["name"] for c in SCHEMA["summary"]] == list(simulation.SUMMARY_KEYS)
    kinds = {"uint64": int, "float64": float, "bool": bool}
    for c in SCHEMA["summary"]:
        assert type(raw["summary"][c["name"]]) is kinds[c["dtype"]], c["name"]
    for frame, cols in SCHEMA["frames"].items():
        assert [(k, str(v.dtype)) for k, v in raw[frame].items()] == [(c["name"], c["dtype"]) for c in cols]
    size = {"float64": 8, "int64": 8, "uint32": 4, "bool": 1}
    for frame, engine in (("samples", simulation._ENGINE_SAMPLE_COLUMNS), ("segments", simulation._SEGMENT_COLUMNS),
                          ("steps", simulation._ENGINE_STEP_COLUMNS)):
        assert engine == {c["name"]: size[c["dtype"]] for c in SCHEMA["frames"][frame]}
    assert simulation.BYTES_PER_SAMPLE == 185 and simulation.BYTES_PER_STEP == 157


def test_the_agentic_columns_and_the_turns_frame_are_the_schema_s():
    res = simulate(Scenario(**TINY, agentic=Agentic(max_turns=3, tool_latency_s=2.0)), record="samples")
    dtypes = {"uint32": pl.UInt32, "float64": pl.Float64, "bool": pl.Boolean}
    extra = res.samples.columns[res.samples.columns.index("status") + 1:]  # after the single-turn columns
    assert [(c, res.samples.schema[c]) for c in extra] == [(c["name"], dtypes[c["dtype"]])
                                                           for c in SCHEMA["agentic_samples"]]
    assert list(res.turns.schema.items()) == [(c["name"], dtypes[c["dtype"]]) for c in SCHEMA["turns"]]
    page = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert all(f"| `{c['name']}` |" in page for c in SCHEMA["agentic_samples"] + SCHEMA["turns"])
    scenario_page = (ROOT / "docs" / "scenario.md").read_text(encoding="utf-8").split("### Agentic (`agentic`)")[1]
    assert all(f"| `{f.name}` |" in scenario_page for f in dataclasses.fields(Agentic))


@pytest.mark.parametrize("sc", [
    Scenario(),
    Scenario(train_s_per_token=1e-4, logprob_s_per_token=1e-5, weight_sync_s=3.0),
    Scenario(slots_per_instance=64, decode_slowdown_per_seq=0.01),
    Scenario(slots_per_instance=8, decode_tokens_per_s=60.0, decode_throughput_table=((1, 60.0), (3, 100.0), (16, 400.0))),
    Scenario(lengths=Empirical(np.array([100.0, 2000.0, 9000.0]))),
    Scenario(lengths=LogNormal(6.0, 1.5, 4096.0)),
], ids=["chapter", "per-token", "slowdown", "table", "empirical", "lognormal"])
def test_python_and_the_engine_agree_in_every_digit(sc):
    s = simulate(sc.replace(horizon_s=60.0), record="summary").summary
    assert s["throughput_ratio"] == sc.throughput_ratio()


def test_the_chapter_s_throughput_ratio_is_the_closed_form():
    # 0.28660546318 (Python's closed form) and 0.28660546833 (the engine's former erfc fit) are one now
    from statistics import NormalDist

    mu, sigma, top = 7.6, 1.0, 16384.0
    z = (math.log(top) - mu) / sigma
    mean = math.exp(mu + sigma**2 / 2) * NormalDist().cdf(z - sigma) + top * (1 - NormalDist().cdf(z))
    assert LogNormal().mean_tokens() == pytest.approx(mean, rel=1e-15)
    assert Scenario().throughput_ratio() == pytest.approx(256 * 30 / mean * 60 / 512, rel=1e-15)
    assert round(Scenario().throughput_ratio(), 11) == 0.28660546319
    assert _rollsim.lognormal_mean(mu, sigma, top) == LogNormal().mean_tokens()


def test_table_interpolation_is_the_engine_s():
    table = ((1, 60.0), (3, 100.0), (16, 400.0))
    sc = Scenario(slots_per_instance=16, decode_tokens_per_s=60.0, decode_throughput_table=table)
    assert sc.decode_speed(2) == _rollsim.table_throughput(list(table), 2) / 2 == 40.0
    assert sc.decode_speed(16) == 25.0
    assert _rollsim.table_throughput(list(table), 10) == 100.0 + 300.0 * (7 / 13)
    assert _rollsim.table_throughput(list(table), 99) == 400.0


def test_the_streaming_strategy_of_the_cross_check_sets_every_field():
    from hypothesis import Phase, find, settings

    from strategies import every_field_scenarios

    def departs(sc):
        return {n for n, f in FIELDS.items() if f["kind"] != "part" and getattr(sc, n) != f["default"]}

    quick = settings(max_examples=1000, database=None, phases=[Phase.generate])  # no shrinking
    strategy = every_field_scenarios(pipeline=st_fully_async())
    everything = {n for n, f in FIELDS.items() if f["kind"] != "part"}
    for name in sorted(everything):  # each field departs from its default in some scenario
        assert name in departs(find(strategy, lambda sc, name=name: name in departs(sc), settings=quick))
    # and many fields at once
    assert len(departs(find(strategy, lambda sc: len(departs(sc)) >= len(everything) - 3, settings=quick))) >= 16
    # and the chapter's shape (only the run's size drawn) comes up too, for the fast path
    chapter_fields = {"rollout_slots", "batch_size", "horizon_s", "decode_tokens_per_s", "train_step_s", "seed", "rng"}
    find(strategy, lambda sc: departs(sc) <= chapter_fields, settings=quick)


def st_fully_async():
    from hypothesis import strategies as st

    return st.builds(FullyAsync, max_staleness=st.one_of(st.none(), st.integers(0, 4)))


# ---- the parts (lengths, pipelines): SCHEMA["parts"] ----------------------------------------------

PARTS = {p["class"]: p for p in SCHEMA["parts"]}


def _part_classes():
    from rollsim import LengthBalanced, OffPolicy, OneStepAsync, Synchronous

    return {"LogNormal": LogNormal, "Empirical": Empirical, "Synchronous": Synchronous, "OneStepAsync": OneStepAsync,
            "OffPolicy": OffPolicy, "FullyAsync": FullyAsync, "LengthBalanced": LengthBalanced,
            "TrainRanks": TrainRanks, "LengthDrift": LengthDrift, "Agentic": Agentic}


def test_every_part_class_is_in_the_schema_with_its_fields_in_order():
    classes = _part_classes()
    assert list(PARTS) == list(classes)
    for name, cls in classes.items():
        init = [f.name for f in dataclasses.fields(cls) if f.init]
        assert init == [f["name"] for f in PARTS[name]["fields"]], name
        for f in PARTS[name]["fields"]:
            assert f["path"] == f"{PARTS[name]['of']}.{f['name']}"
            assert f["doc"] and "\n" not in f["doc"], f["path"]
    assert {p["kind"] for p in SCHEMA["parts"] if p["of"] == "lengths"} == set(FIELDS["lengths"]["choices"])
    assert {p["kind"] for p in SCHEMA["parts"] if p["of"] == "pipeline"} == set(FIELDS["pipeline"]["choices"])


def test_the_part_dataclass_defaults_are_the_schema_s():
    for name, cls in _part_classes().items():
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            spec = next(s for s in PARTS[name]["fields"] if s["name"] == f.name)
            if spec["required"]:
                assert f.default is dataclasses.MISSING, spec["path"]
            elif isinstance(spec["default"], list):
                assert f.default == tuple(spec["default"]), spec["path"]
            else:
                assert type(f.default) is type(spec["default"]) and f.default == spec["default"], spec["path"]
    # and the instances keep them (the checks normalize, they never change a default)
    assert LogNormal().to_dict() == {"kind": "lognormal", **{f["name"]: f["default"] for f in PARTS["LogNormal"]["fields"]}}


def test_the_length_constants_are_the_schema_s():
    from rollsim import lengths

    lo = {f["name"]: f for f in PARTS["LogNormal"]["fields"]}
    assert (lengths.MU_BOUND, lengths.MAX_SIGMA, lengths.MAX_TOKENS) == (lo["mu"]["hi"], lo["sigma"]["hi"], 2.0**40)
    assert -lo["mu"]["lo"] == lo["mu"]["hi"] and lo["max_tokens"]["hi"] == lengths.MAX_TOKENS
    assert lengths.MIN_TOKENS == PARTS["Empirical"]["fields"][0]["lo"] == 2.0**-40
    from rollsim import pipelines

    assert pipelines.MAX_OVER_SAMPLING == PARTS["OffPolicy"]["fields"][1]["hi"] == 1e6
    assert list(pipelines._ON_UPDATE) == PARTS["FullyAsync"]["fields"][6]["choices"]


def _out_of_range(f):
    """Values just outside a part field's range (with the number the message prints)."""
    lo, hi = f["lo"], f["hi"]
    if f["kind"] == "int":
        return [lo - 1, hi + 1]
    return [v for v in (lo if f["lo_open"] else lo - 0.5, hi if f["hi_open"] else hi * 2 + 1)]


@pytest.mark.parametrize("cls,name", [(p["class"], f["name"]) for p in SCHEMA["parts"] for f in p["fields"]
                                      if f["range"] and f["kind"] in ("float", "int", "dist")
                                      and p["class"] != "Empirical"])
def test_part_ranges_are_refused_with_the_schema_s_range(cls, name):
    spec = next(f for f in PARTS[cls]["fields"] if f["name"] == name)
    for bad in _out_of_range(spec):
        with pytest.raises(ScenarioError) as e:
            _part_classes()[cls](**{name: bad})
        assert str(e.value).startswith(f"{spec['path']}: must be in {spec['range']}{spec['suffix']}, got "), str(e.value)


@pytest.mark.parametrize("field,bad,want", [
    # the engine's own check (the wire dict bypasses the Python classes) prints what Python prints
    ("group_correlation", 1.0, "lengths.group_correlation: must be in [0, 1), got 1.0"),
    ("mu", -101.0, "lengths.mu: must be in [-100, 100] (the log of the median length in tokens), got -101.0"),
    ("max_tokens", 0.5, "lengths.max_tokens: must be in [1, 2**40] tokens, got 0.5"),
])
def test_the_engine_refuses_lengths_alike(field, bad, want):
    with pytest.raises(ScenarioError) as e:
        LogNormal(**{field: bad})
    assert str(e.value) == want
    d = Scenario(**TINY).to_dict()
    d["lengths"] = {**d["lengths"], field: bad}
    with pytest.raises(ScenarioError) as e:
        _rollsim.simulate(d, False)
    assert str(e.value) == want


@pytest.mark.parametrize("field,bad", [("max_ready_groups", 0), ("max_staleness", 2**32), ("admission_eta", -1),
                                       ("max_lag_samples", 0)])
def test_the_engine_refuses_pipeline_integers_alike(field, bad):
    with pytest.raises(ScenarioError) as e:
        FullyAsync(**{field: bad})
    want = str(e.value)
    spec = next(f for f in PARTS["FullyAsync"]["fields"] if f["name"] == field)
    assert want == f"pipeline.{field}: must be in {spec['range']}, got {bad}"
    d = Scenario(**TINY).to_dict()
    d["pipeline"] = {**d["pipeline"], field: bad}
    with pytest.raises(ScenarioError) as e:
        _rollsim.simulate(d, False)
    assert str(e.value) == want


@pytest.mark.parametrize("field,bad", [("max_turns", 0), ("stop_prob", 1.5), ("failure_rate", 1.0),
                                       ("failure_rate", -0.5), ("env_overhead_s", 2e9)])
def test_the_engine_refuses_agentic_ranges_alike(field, bad):
    # the Python class and the engine's AgenticConfig::validate check the schema's range alike
    with pytest.raises(ScenarioError) as e:
        Agentic(**{field: bad})
    want = str(e.value)
    spec = next(f for f in PARTS["Agentic"]["fields"] if f["name"] == field)
    assert want == f"agentic.{field}: must be in {spec['range']}{spec['suffix']}, got {bad}"
    d = Scenario(**TINY, agentic=Agentic(max_turns=2)).to_dict()
    d["agentic"] = {**d["agentic"], field: bad}
    with pytest.raises(ScenarioError) as e:
        _rollsim.simulate(d, False)
    assert str(e.value) == want


def test_the_agentic_part_is_the_schema_s():
    from rollsim import agentic

    spec = {f["name"]: f for f in PARTS["Agentic"]["fields"]}
    assert agentic.MAX_TURNS == spec["max_turns"]["hi"] == 2**20
    assert [spec[n]["kind"] for n in ("tool_latency_s", "observation_tokens")] == ["dist", "dist"]
    assert spec["env_slots"]["range"] == "[1, 16777216]" and spec["env_slots"]["extra"] == "or None (unbounded)"
    # the flags' help is the schema's doc line; choices and defaults the dataclass's (from the schema)
    fields = {f.key: f for f in scenario_toml.agentic_fields()}
    assert list(fields) == list(spec)
    assert {k: f.help for k, f in fields.items()} == {k: s["doc"] for k, s in spec.items()}
    assert {k: f.default for k, f in fields.items() if k != "turn_scale"} == {
        k: s["default"] for k, s in spec.items() if k != "turn_scale"}
    assert fields["turn_scale"].default == () and spec["turn_scale"]["default"] == []
    assert typing.get_args(fields["kv_policy"].type) == tuple(spec["kv_policy"]["choices"])
    assert typing.get_args(fields["on_failure"].type) == tuple(spec["on_failure"]["choices"])
    # the engine's wire form of the defaults (None sent as 0 / inf)
    d = Agentic().to_dict()
    assert d["env_slots"] == d["max_trajectories"] == 0 and d["max_context_tokens"] == math.inf
    assert {k: v for k, v in d.items() if k not in ("env_slots", "max_trajectories", "max_context_tokens",
                                                     "turn_scale")} == {
        k: s["default"] for k, s in spec.items() if k not in ("env_slots", "max_trajectories", "max_context_tokens",
                                                             "turn_scale")}


def test_the_parts_tables_are_in_the_docs():
    page = (ROOT / "docs" / "scenario.md").read_text(encoding="utf-8")
    for p in SCHEMA["parts"]:
        section = page.split(f"### {p['class']} (`{p['of']}`)\n", 1)[1].split("\n### ", 1)[0]
        assert [line.split("`")[1] for line in section.splitlines() if line.startswith("| `")] == [
            f["name"] for f in p["fields"]], p["class"]


# ---- the README's lists of summary values and frame columns ----------------------------------------

def _readme_list(head: str) -> list[str]:
    """The backticked names of the README paragraph that starts with ``head``, without ``head``."""
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    para = text.split(f"\n{head}", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"`([a-z_0-9]+)`", para)


def test_the_readme_lists_every_summary_value_and_frame_column():
    res = simulate(Scenario(**TINY), record="samples")
    assert sorted(_readme_list("`res.summary` (dict):")) == sorted(c["name"] for c in SCHEMA["summary"])
    for frame, got in (("samples", res.samples), ("steps", res.steps), ("segments", res.segments)):
        listed = _readme_list(f"`res.{frame}` (polars")
        assert sorted(listed) == sorted(got.columns), frame  # every column of the frame, once
        assert {c["name"] for c in SCHEMA["frames"][frame]} <= set(listed), frame  # the engine's among them


def test_the_parts_toml_keys_and_cli_flags_are_the_schema_s():
    names = {c: [f["name"] for f in p["fields"]] for c, p in PARTS.items()}
    for kind, cls in scenario_toml.PIPELINE_KINDS.items():
        assert scenario_toml.pipeline_keys(kind) == {"kind", *names[cls.__name__]}, kind
    assert scenario_toml.batch_order_keys() == {"kind", *names["LengthBalanced"]}
    assert scenario_toml.lengths_keys("lognormal") == {"kind", *names["LogNormal"]}
    assert scenario_toml.lengths_keys("empirical") == {"kind", *names["Empirical"]}
    parser = build_parser()
    run = next(a for a in parser._subparsers._group_actions[0].choices.values() if a.prog.endswith(" run"))
    flags = {o for a in run._actions for o in a.option_strings}
    paths = {f"{p['of']}.{n}" for p in SCHEMA["parts"] for n in names[p["class"]] if p["of"] not in cli.TOML_ONLY}
    by_path = {f.path: f for f in scenario_toml.lengths_fields() + scenario_toml.pipeline_fields()
               + scenario_toml.length_drift_fields()}
    for path in sorted(paths):
        flag = by_path[path].flag
        assert flag is None or flag in flags, path
    assert sum(by_path[p].flag is not None for p in paths) >= 15
