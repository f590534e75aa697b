"""Defects found playing a user who brings a framework run and an agentic user (README "Bring your own
run" and "Agentic rollouts"): metrics files of other layouts read as the CSV, an agentic run's turns
written by --out and drawn by rollsim plot / report, the calibrated lengths' origin in the table."""

from __future__ import annotations

import json

import polars as pl
import pytest

import rollsim
from rollsim import Scenario, configs, simulate, trajectories
from rollsim.cli import main
from rollsim.configs import EXAMPLES
from rollsim.report import load as load_dir

CSV = EXAMPLES / "verl_grpo_metrics.csv"


@pytest.fixture(scope="module")
def imported():
    return configs.load(EXAMPLES / "verl_grpo.yaml")


def _params(metrics, imp) -> dict[str, float]:
    cal = rollsim.calibrate(metrics, imp, bootstrap=0)
    return dict(zip(cal.params["name"], cal.params["value"]))


def test_json_layouts_read_as_the_csv(tmp_path, imported):
    """A list of rows (as before), an object of columns and pandas' default to_json (index-keyed, in any
    key order) give the CSV's fit exactly; the object of columns used to read as one row of lists."""
    df = pl.read_csv(CSV)
    want = _params(CSV, imported)
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(df.to_dicts()))
    cols = tmp_path / "cols.json"
    cols.write_text(json.dumps({c: df[c].to_list() for c in df.columns}))
    pandas = tmp_path / "pandas.json"
    pandas.write_text(json.dumps({c: {str(i): v for i, v in reversed(list(enumerate(df[c].to_list())))}
                                  for c in df.columns}))
    for path in (rows, cols, pandas):
        assert _params(path, imported) == want, path.name


def test_rows_with_a_missing_key_in_json_lines_are_left_out(tmp_path, imported):
    rows = pl.read_csv(CSV).to_dicts()
    del rows[3]["timing_s/update_weights"]
    p = tmp_path / "m.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.warns(rollsim.MetricsRowsSkippedWarning, match="timing_s/update_weights at step 3"):
        cal = rollsim.calibrate(p, imported, bootstrap=0)
    assert cal.metrics.height == 39


def test_a_step_column_not_from_0_moves_only_the_origin(tmp_path, imported):
    """Steps 100.. instead of 0..: the same scenario (the lengths at the mean logged step), the drift the
    same, and the table's mu, the origin of the drift line, labelled as at step 0."""
    df = pl.read_csv(CSV)
    p = tmp_path / "m.csv"
    df.with_columns(pl.col("training/global_step") + 100).write_csv(p)
    a = rollsim.calibrate(CSV, imported, bootstrap=0)
    b = rollsim.calibrate(p, imported, bootstrap=0)
    assert b.scenario.lengths.mu == pytest.approx(a.scenario.lengths.mu, abs=1e-9)
    va, vb = (dict(zip(c.params["name"], c.params["value"])) for c in (a, b))
    assert vb["lengths.drift"] == pytest.approx(va["lengths.drift"], rel=1e-9)
    assert vb["lengths.mu"] == pytest.approx(va["lengths.mu"] - 100 * va["lengths.drift"], abs=1e-9)
    assert dict(zip(b.params["name"], b.params["unit"]))["lengths.mu"] == "log tokens at step 0"


def test_openrlhf_dotted_example_still_imports():
    imp = configs.load(EXAMPLES / "openrlhf_ppo.sh")
    assert imp.scenario.batch_size == 128 * 8 and imp.scenario.group_size == 8


def test_agentic_run_out_writes_turns_and_plot_draws_them(tmp_path, capsys):
    """`rollsim run --agentic-preset ... --out DIR` writes turns.parquet (the frame of res.turns, the same
    run); rollsim plot --kind slot-timeline and rollsim report draw its turns and tool calls
    (trajectories.turn_timeline: a trajectory leaves its slot during a call, so a bar per sample from
    start to finish spanned the calls). A non-agentic run writes none."""
    out = tmp_path / "run"
    assert main(["run", "--agentic-preset", "code-interpreter-math", "--horizon-s", "600", "--out", str(out)]) == 0
    turns = pl.read_parquet(out / "turns.parquet")
    res = simulate(trajectories.code_interpreter_math(Scenario(horizon_s=600.0)), record="samples")
    assert turns.equals(res.turns)
    assert turns["sample_id"].n_unique() == res.samples.filter(pl.col("turns") > 0).height
    loaded = load_dir(out).runs[""]
    assert loaded.turns.equals(turns) and loaded.scenario.agentic.kv_policy == "keep"
    fig = rollsim.report.plot_dir(out, "slot-timeline", max_slots=8)
    assert fig.axes[0].get_title() == "Turns and tool calls per slot"
    assert main(["plot", str(out), "--kind", "slot-timeline", "--out", str(tmp_path / "t.png")]) == 0
    assert main(["report", str(out)]) == 0
    assert main(["run", "--agentic-preset", "code-interpreter-math", "--horizon-s", "600", "--out", str(out)]) == 2
    assert main(["run", "--agentic-preset", "code-interpreter-math", "--horizon-s", "600", "--out", str(out),
                 "--force"]) == 0
    plain = tmp_path / "plain"
    assert main(["run", "--horizon-s", "600", "--out", str(plain)]) == 0
    assert not (plain / "turns.parquet").exists()
    fig = rollsim.report.plot_dir(plain, "slot-timeline", max_slots=8)
    assert fig.axes[0].get_title() != "Turns and tool calls per slot"
    capsys.readouterr()


def test_agentic_compare_out_writes_turns_per_pipeline(tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["compare", "--agentic-preset", "code-interpreter-math", "--horizon-s", "600", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.glob("turns_*.parquet")) == [
        "turns_fully_async.parquet", "turns_fully_async_cap_2.parquet", "turns_one_step_async.parquet",
        "turns_synchronous.parquet"]
    fig = rollsim.report.plot_dir(out, "slot-timeline", max_slots=8, pipeline="synchronous")
    assert fig.axes[0].get_title() == "Turns and tool calls per slot"
    capsys.readouterr()


def test_held_calls_are_drawn_full_height_from_a_directory(tmp_path, capsys):
    out = tmp_path / "hold"
    assert main(["run", "--agentic-preset", "code-interpreter-math", "--kv-policy", "hold", "--horizon-s", "600",
                 "--out", str(out)]) == 0
    fig = rollsim.report.plot_dir(out, "slot-timeline", max_slots=8)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["turn (color: policy version)", "tool call (slot held)"]
    capsys.readouterr()


def test_agentic_gpu_time_and_turn_conservation():
    """The README's per-run outputs add up: decode + prefill + hold slot-seconds are slot_busy_s; the
    turns frame has one row per decoded turn (summary turns, samples' turns), one per tool call that
    started (summary tool_calls), each sample's tool_s the sum of its calls' spans; a finished
    trajectory's context (answer tokens + observations) stays within max_context_tokens."""
    sc = trajectories.swe_agent(Scenario(horizon_s=3600.0))
    res = simulate(sc, record="samples")
    s, t, m = res.samples, res.turns, res.summary
    assert m["gpu_decode_s"] + m["gpu_prefill_s"] + m["gpu_hold_s"] == pytest.approx(m["slot_busy_s"], rel=1e-9)
    assert t.height == m["turns"] == s["turns"].sum()
    assert t.filter(pl.col("call_end_s").is_not_null()).height == m["tool_calls"]
    calls = (t.filter(pl.col("call_end_s").is_not_null()).group_by("sample_id")
             .agg((pl.col("call_end_s") - pl.col("end_s")).sum().alias("c")).join(s, on="sample_id"))
    assert (calls["c"] - calls["tool_s"]).abs().max() < 1e-6
    done = s.filter(pl.col("finish_s").is_not_nan())
    assert (done["length_tokens"] + done["tokens_observed"]).max() <= sc.agentic.max_context_tokens + 1e-6
    assert done.filter(pl.col("truncated")).height > 0


def test_numbers_written_as_text_are_the_numbers(tmp_path, imported):
    """JSON rows with quoted numbers ("104.06", as some loggers export) fit as the CSV does."""
    df = pl.read_csv(CSV)
    p = tmp_path / "m.json"
    p.write_text(json.dumps([{k: f" {v!r}" for k, v in r.items()} for r in df.to_dicts()]))
    assert _params(p, imported) == _params(CSV, imported)


def test_verl_script_naming_a_missing_config_file_says_so(tmp_path):
    """A launch script's --config-path / --config-name file that is not next to it was skipped without a
    word: its options (the run's batch, lengths, ...) silently took verl's defaults. Now a note and a
    warning name it; a file that is there is read as before."""
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo --config-path=conf --config-name=my_grpo "
                      "data.train_batch_size=64\n")
    imp = configs.load(script)
    [w] = imp.warnings()
    assert w == (f"rollsim: warning: --config-name='{tmp_path / 'conf' / 'my_grpo.yaml'}': config file not found "
                 "(--config-path is relative to the script): its options are not read, verl's defaults stand for them; "
                 "put the file there, or give its options as overrides")
    assert imp.scenario.group_size == 1  # verl's default rollout.n
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "my_grpo.yaml").write_text("actor_rollout_ref:\n  rollout:\n    n: 4\n")
    imp = configs.load(script)
    assert imp.warnings() == [] and imp.scenario.group_size == 4 and imp.scenario.batch_size == 256


def test_verl_multi_turn_options_point_to_the_agentic_model(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.multi_turn.enable=True "
                      "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=5\n")
    notes = {n.option: n for n in configs.load(script).notes}
    n = notes["actor_rollout_ref.rollout.multi_turn.max_assistant_turns"]
    assert n.kind == "ignored" and "rollsim's agentic model" in n.became and "--agentic-preset" in n.became


def test_sweep_plot_unknown_column_names_the_nearest(tmp_path):
    """`rollsim plot SWEEP --kind lines --x env_slots` listed all 80 columns; now the near miss is named
    among the varied fields (an axis) or the metrics (the value)."""
    df = rollsim.sweep(trajectories.code_interpreter_math(Scenario(horizon_s=300.0)),
                       {"agentic.env_slots": [8, 64]}, seeds=[0], progress=False)
    with pytest.raises(rollsim.ScenarioError) as e:
        rollsim.plot.sweep_lines(df, "env_wait_s", "env_slots")
    assert str(e.value) == ("x: unknown column 'env_slots'; did you mean 'agentic.env_slots'? the frame's varied "
                            "fields: ['agentic.env_slots']")
    with pytest.raises(rollsim.ScenarioError, match=r"^metric: unknown column 'env_wait'; did you mean 'env_wait_s'"):
        rollsim.plot.sweep_lines(df, "env_wait", "agentic.env_slots")


def test_whatif_livelock_note_gives_the_variants_cadence(capsys):
    """--pipeline verl-fully-async --max-staleness 2 on the colocated example: the variant syncs every 4
    steps (verl's default trigger_parameter_sync_step), so cap 2 cannot train; the footnote said the
    config's cadence, "below sync_every - 1 = 0 ... the smallest that trains is 0", contradicting itself."""
    ex = str(EXAMPLES)
    assert main(["whatif", "--config", f"{ex}/verl_grpo.yaml", "--metrics", f"{ex}/verl_grpo_metrics.csv",
                 "--pipeline", "verl-fully-async", "--max-staleness", "2,3", "--bootstrap", "0", "--draws", "0"]) == 0
    out = capsys.readouterr().out
    note = next(line for line in out.splitlines() if line.startswith("! not simulated"))
    assert "below sync_every - 1 = 3 cannot train" in note and "every 4 steps (sync_every = 4)" in note
    assert note.endswith("The smallest --max-staleness that trains is 3 (the variant's sync_every = 4, "
                         "verl-fully-async's trigger_parameter_sync_step (set it with --trigger-parameter-sync-step))")
    assert sum(line.startswith("verl-fully-async, max_staleness=") for line in out.splitlines()) == 2


@pytest.mark.parametrize("sc", [
    Scenario(pipeline=rollsim.FullyAsync(on_update="keep_recompute"), horizon_s=1800.0),
    Scenario(group_size=8, lengths=rollsim.LogNormal(6.5, 1.0, 8192),
             agentic=rollsim.Agentic(max_turns=8, stop_prob=0.25, tool_latency_s=rollsim.LogNormal(0.12, 1.0, 30.0),
                                     observation_tokens=200.0, env_slots=128, max_trajectories=512)),
], ids=["keep_recompute", "agentic"])
def test_in_flight_versions_are_as_of_the_last_token_so_far(sc):
    """version_end ("the last token so far") and n_versions of the answers in flight at the end agree with
    their token spans, as a finished answer's do; the engine set them only at the finish, so an answer
    resumed with new weights, or a trajectory's later turn, kept its first span's (98 of 255 in flight
    with keep_recompute; turns at version 20 on a trajectory whose version_end said 19)."""
    res = simulate(sc, record="samples")
    last = (res.segments.sort("sample_id", "last_token").group_by("sample_id")
            .agg(pl.col("version").last().alias("v"), pl.len().alias("n")))
    j = last.join(res.samples, on="sample_id")
    flying = j.filter(pl.col("status") == "in_flight")
    assert flying.height > 100 and flying.filter(pl.col("n") > 1).height > 0
    assert j.filter((pl.col("v") != pl.col("version_end")) | (pl.col("n") != pl.col("n_versions"))).height == 0
    if sc.agentic is not None:
        t = res.turns.join(res.samples.select("sample_id", "version_start", "version_end"), on="sample_id")
        assert t.filter((pl.col("version") < pl.col("version_start")) | (pl.col("version") > pl.col("version_end"))).is_empty()


def test_calibrate_table_says_a_phase_not_logged(imported):
    """The verl example logs no timing_s/old_log_prob: its log-prob costs are 0 and their source said
    'logprob_s', a name of no column; it now says the metric was not logged."""
    cal = rollsim.calibrate(CSV, imported, bootstrap=0)
    src = dict(zip(cal.params["name"], cal.params["source"]))
    assert src["logprob_step_s"] == src["logprob_s_per_token"] == "not logged (timing_s/old_log_prob): 0"
    assert src["train_step_s"] == "timing_s/update_actor"
