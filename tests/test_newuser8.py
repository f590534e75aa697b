"""What the README and docs/configs.md say the code does, checked where a reading of them found the text
stale: the what-if table of docs/configs.md as `rollsim whatif` prints it, the row times of the verl fully
async example's scenario against its pause, the pipeline names each command takes, and the files
`rollsim run --out` writes."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from test_calibrate_rows import logged_rows

from rollsim import LogNormal, OffPolicy, ScenarioError, configs
from rollsim.cli import main
from rollsim.pipelines import pipeline_from_name

EX = configs.EXAMPLES
DOCS = os.path.join(os.path.dirname(__file__), "..", "docs", "configs.md")


def test_configs_md_whatif_block_is_what_the_command_prints(capsys):
    with open(DOCS, encoding="utf-8") as f:
        text = f.read()
    blocks = [b for b in re.findall(r"```text\n(.*?)```", text, flags=re.S) if b.startswith("rollsim whatif: ")]
    assert len(blocks) == 1
    assert main(["whatif", "--config", str(EX / "verl_grpo.yaml"), "--metrics", str(EX / "verl_grpo_metrics.csv"),
                 "--pipeline", "fully-async", "--max-staleness", "1,2,4", "--rollout-gpus", "8,12"]) == 0
    out = capsys.readouterr().out
    assert out == blocks[0]
    # the prose beside it: staleness_long undefined in every fully async row, drops 0.62-0.89
    rows = [line for line in out.splitlines() if line.startswith("fully-async")]
    assert len(rows) == 6 and all(line.split()[-2] == "-" for line in rows)
    drops = [float(line.split()[-1]) for line in rows]
    assert min(drops) == pytest.approx(0.617) and max(drops) == pytest.approx(0.892)


def test_row_time_of_the_verl_fully_async_example_against_its_pause():
    """docs/configs.md: 160 s per row for pauses up to 40 s, then 194 s at 80 s and 232 s at 120 s (the
    scenario the example's rows were generated from, tests/test_calibrate_rows.py's example_rows)."""
    base = configs.load(EX / "verl_fully_async.sh").scenario
    got = {}
    for pause in (0.0, 40.0, 80.0, 120.0):
        sc = base.replace(decode_tokens_per_s=45.0, rollout_pause_s=pause, train_step_s=12.0, train_s_per_token=3e-5,
                          weight_sync_s=0.75, lengths=LogNormal(6.3, 0.6, max_tokens=8192.0))
        got[pause] = float(np.mean(logged_rows(sc, 30, 8, 0.003, seed=5)["step_s"].to_numpy()))
    assert round(got[0.0]) == round(got[40.0]) == 160
    assert round(got[80.0]) == 194 and round(got[120.0]) == 232
    assert 0.9 < (got[120.0] - got[80.0]) / 40.0 < 1.0  # one for one, about


def test_pipeline_names_per_command(capsys):
    # pipeline_from_name (whatif's reader): k-step needs its K, the file kind off_policy too
    assert pipeline_from_name("k-step:2") == OffPolicy(k=2) == pipeline_from_name("off_policy:2")
    for name in ("k-step", "off_policy"):
        with pytest.raises(ScenarioError, match=r"^pipeline: .*did you mean 'k-step:K'"):
            pipeline_from_name(name)
    with pytest.raises(ScenarioError, match=r"did you mean 'fully-async'\?"):
        pipeline_from_name("async")
    # run: the file kinds and k-step with --k
    assert main(["run", "--pipeline", "off_policy", "--k", "3", "--horizon-s", "600"]) == 0
    assert main(["run", "--pipeline", "synchronous", "--horizon-s", "600"]) == 0
    capsys.readouterr()
    # split: no k-step pipeline
    with pytest.raises(SystemExit) as e:
        main(["split", "--gpus", "4", "--gpu-s-per-token", "0.004", "--pipeline", "k-step"])
    assert e.value.code == 2
    assert "invalid choice: 'k-step' (choose from 'sync', 'one-step', 'fully-async')" in capsys.readouterr().err


def test_run_out_writes_the_files_the_readme_names(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--horizon-s", "600", "--out", str(out)]) == 0
    assert sorted(os.listdir(out)) == ["samples.parquet", "scenario.json", "scenario.toml", "segments.parquet",
                                       "steps.parquet", "summary.json"]
