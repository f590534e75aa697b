"""``rollsim sweep``'s printed table: an agentic sweep gets a second table of the agentic summary values
(every one of rollsim._rollsim.SCHEMA["agentic_summary"] the runs give, those 0 or NaN in every scenario
named below it); csv has them with their intervals; a sweep that is not agentic prints none of them."""

from __future__ import annotations

import polars as pl

from rollsim import _rollsim
from rollsim._text import sig
from rollsim.cli import main
from rollsim.sweeps import read_sweep

AGENTIC = [c["name"] for c in _rollsim.SCHEMA["agentic_summary"]]
BASE = """seeds = 2
[base]
batch_size = 64
group_size = 8
decode_tokens_per_s = 40.0
horizon_s = 600.0
lengths = { kind = "lognormal", mu = 5.5, sigma = 0.5, max_tokens = 4096 }
%s
[grid]
rollout_slots = [32, 64]
"""
AGENT = 'agentic = { max_turns = 4, tool_latency_s = 5.0, observation_tokens = 100.0, env_slots = 8 }'


def test_agentic_sweep_prints_the_agentic_values(tmp_path, capsys):
    f = tmp_path / "a.toml"
    f.write_text(BASE % AGENT)
    assert main(["sweep", str(f), "--out", str(tmp_path / "o"), "--no-progress"]) == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index("agentic trajectories (means over seeds; 95% intervals in --format csv):")
    df = read_sweep(tmp_path / "o")
    means = df.group_by("rollout_slots").agg(pl.col(AGENTIC).mean()).sort("rollout_slots")
    quiet = [m for m in AGENTIC if means[m].fill_nan(0.0).fill_null(0.0).eq(0.0).all()]
    assert {"tool_retries", "trajectories_failed", "kv_evictions"} <= set(quiet) and "turns" not in quiet
    assert out[-1] == f"0 or NaN in every scenario: {', '.join(quiet)}"
    header = out[at + 1].split()           # the shared text table: a header, a rule, then the rows
    assert set(out[at + 2]) <= {"-", " "}
    assert header == ["rollout_slots", "seeds", *[m for m in AGENTIC if m not in quiet]]
    row32 = out[at + 3].split()
    assert row32[:2] == ["32", "2"] and means["turns"][0] > 0
    # the metrics to 4 significant digits
    assert row32[2] == sig(means["turns"][0]) and row32[header.index("env_wait_s")] == sig(means["env_wait_s"][0])
    # csv: every agentic value with its interval, none left out
    assert main(["sweep", str(f), "--out", str(tmp_path / "o"), "--no-progress", "--format", "csv"]) == 0
    csv = capsys.readouterr().out.splitlines()[0].split(",")
    assert all(f"{m}_mean" in csv and f"{m}_ci_high" in csv for m in AGENTIC)


def test_plain_sweep_prints_no_agentic_values(tmp_path, capsys):
    f = tmp_path / "p.toml"
    f.write_text(BASE % "")
    assert main(["sweep", str(f), "--out", str(tmp_path / "o"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "agentic" not in out and "turns" not in out and "rollout_utilization ±95%" in out
    assert main(["sweep", str(f), "--out", str(tmp_path / "o"), "--no-progress", "--format", "csv"]) == 0
    assert "turns_mean" not in capsys.readouterr().out
