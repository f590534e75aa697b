"""rollsim report / rollsim plot on run, compare and sweep directories."""

import argparse
import base64
import io
import itertools
import re

import polars as pl
import pytest

matplotlib = pytest.importorskip("matplotlib")
pytest.importorskip("matplotlib.image")  # matplotlib.image.imread below

from rollsim import Scenario, cli, report, simulate  # noqa: E402


def parse(argv):
    """The rollsim parser with the report/plot subcommands added (as cli.py will wire them)."""
    p = argparse.ArgumentParser(prog="rollsim")
    sub = p.add_subparsers(dest="command", required=True)
    report.add_parser(sub)
    return p.parse_args(argv)


def main(argv):
    args = parse(argv)
    return args.func(args)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    run, cmp, sweep = root / "run", root / "cmp", root / "sweep"
    assert cli.main(["run", "--out", str(run), "--rng", "python", "--max-staleness", "2"]) == 0
    assert cli.main(["compare", "--out", str(cmp), "--format", "csv"]) == 0
    sweep.mkdir()
    base = Scenario(horizon_s=1800, rollout_slots=32, batch_size=64)
    rows = []
    for cap, slots, seed in itertools.product([0, 2, None], [16, 32], [0, 1]):
        s = simulate(base.replace(seed=seed, rollout_slots=slots, **{"pipeline.max_staleness": cap}),
                     record="summary").summary
        rows.append({"pipeline.max_staleness": cap, "rollout_slots": slots, "seed": seed} | s)
    frame = pl.DataFrame(rows)
    frame[:5].write_parquet(sweep / "chunk-0000.parquet")
    frame[5:].write_parquet(sweep / "chunk-0001.parquet")
    return {"run": run, "compare": cmp, "sweep": sweep, "frame": frame}


def images(text):
    """Decoded embedded PNGs of an HTML report."""
    return [matplotlib.image.imread(io.BytesIO(base64.b64decode(b)), format="png")
            for b in re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)]


def drawn(img):
    return ((abs(img[..., :3] - 1.0)).sum(axis=-1) > 0.1).mean()


def test_load_kinds(dirs):
    run = report.load(dirs["run"])
    assert run.kind == "run" and list(run.runs) == [""] and run.runs[""].summary["steps"] == 33
    cmp = report.load(dirs["compare"])
    assert cmp.kind == "compare"
    assert list(cmp.runs) == ["synchronous", "one-step async", "fully async", "fully async, cap 2"]
    assert cmp.runs["synchronous"].summary["steps"] == 11
    sw = report.load(dirs["sweep"])
    assert sw.kind == "sweep" and sw.table.height == 12
    assert report.load(dirs["sweep"] / "chunk-0000.parquet").table.height == 5


def test_report_run_html(dirs, capsys):
    assert main(["report", str(dirs["run"])]) == 0
    out = dirs["run"] / "report.html"
    assert f"wrote {out}" in capsys.readouterr().err
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<h1>rollsim run report</h1>" in text
    assert text.count("<table>") == 5                   # summary, staleness by length, learning (2), step time
    assert "<td class=\"s\">rollout_utilization</td><td class=\"s\">100.0%</td>" in text
    assert "[16000, inf)" in text and "generation_s" in text
    imgs = images(text)
    assert len(imgs) == 5  # with the learning figure
    assert all(img.shape[0] > 250 and drawn(img) > 0.03 for img in imgs)
    assert "src=\"http" not in text and "<script" not in text       # self-contained


def test_report_compare_markdown(dirs):
    out = dirs["compare"] / "r" / "cmp.md"
    assert main(["report", str(dirs["compare"]), "--out", str(out), "--max-slots", "16"]) == 0
    text = out.read_text()
    assert text.startswith("# rollsim pipeline comparison")
    table = text.split("## Comparison")[1].split("##")[0]
    for name in ("synchronous", "one-step async", "fully async", "fully async, cap 2"):
        assert f"| {name} |" in table
    assert "| synchronous | 11 | 30.3% |" in table
    assert "| fully async | [16000, inf) |" in text
    figs = re.findall(r"!\[[^]]*\]\((cmp_files/figure\d\.png)\)", text)
    assert len(figs) == 5  # with the learning figure
    for f in figs:
        img = matplotlib.image.imread(out.parent / f)
        assert (out.parent / f).stat().st_size > 10_000 and drawn(img) > 0.03


def test_report_sweep(dirs):
    assert main(["report", str(dirs["sweep"]), "--format", "md"]) == 0
    text = (dirs["sweep"] / "report.md").read_text()
    assert "12 runs; 2 seed(s) per scenario; varied fields: pipeline.max_staleness, rollout_slots." in text
    assert "| pipeline.max_staleness | rollout_slots | steps | rollout_utilization | staleness_mean |" in text
    assert "| none | 32 |" in text
    figs = re.findall(r"\((report_files/figure\d+\.png)\)", text)
    assert len(figs) == 2 * 6                   # heatmap + lines for each of six key metrics
    html_out = dirs["sweep"] / "sweep.html"
    assert main(["report", str(dirs["sweep"]), "--out", str(html_out)]) == 0
    assert len(images(html_out.read_text())) == 12


def test_report_sweep_one_field_and_three_fields(dirs, tmp_path):
    f = dirs["frame"]
    one = f.filter(pl.col("rollout_slots") == 16)
    one.write_parquet(tmp_path / "one.parquet")
    out = report.write_report(tmp_path / "one.parquet", tmp_path / "one.md")
    with open(out) as fh:
        text = fh.read()
    assert "varied fields: pipeline.max_staleness." in text
    assert len(re.findall(r"figure\d+\.png\)", text)) == 6      # lines only
    three = f.with_columns(pl.lit(60.0).alias("train_step_s"))
    three = pl.concat([three, three.with_columns(pl.lit(120.0).alias("train_step_s"))])
    (tmp_path / "three").mkdir()
    three.write_parquet(tmp_path / "three" / "c.parquet")
    with open(report.write_report(tmp_path / "three", fmt="md")) as fh:
        text = fh.read()
    assert "(with train_step_s = 60)" in text


@pytest.mark.parametrize("kind", ["staleness-by-length", "slot-timeline", "utilization", "step-breakdown"])
@pytest.mark.parametrize("which", ["run", "compare"])
def test_plot_command(dirs, tmp_path, kind, which):
    out = tmp_path / f"{kind}.png"
    slots = ["--max-slots", "8"] if kind == "slot-timeline" else []   # refused for the other kinds
    assert main(["plot", str(dirs[which]), "--kind", kind, "--out", str(out), *slots]) == 0
    assert out.stat().st_size > 8_000
    assert drawn(matplotlib.image.imread(out)) > 0.03


def test_plot_command_options(dirs, tmp_path):
    out = tmp_path / "one.svg"
    assert main(["plot", str(dirs["compare"]), "--kind", "slot-timeline", "--pipeline", "fully_async_cap_2",
                 "--out", str(out)]) == 0
    assert "<svg" in out.read_text()
    fig = report.plot_dir(dirs["compare"], "staleness-by-length", edges=(4000, 8000), pipeline="fully async")
    assert len(fig.axes[0].get_xticklabels()) == 3
    assert main(["plot", str(dirs["sweep"]), "--kind", "heatmap", "--metric", "drop_fraction", "--x",
                 "pipeline.max_staleness", "--y", "rollout_slots", "--out", str(tmp_path / "h.png")]) == 0
    assert main(["plot", str(dirs["sweep"]), "--kind", "lines", "--metric", "steps", "--x", "rollout_slots",
                 "--hue", "pipeline.max_staleness", "--out", str(tmp_path / "l.png")]) == 0
    assert (tmp_path / "h.png").stat().st_size > 8_000 and (tmp_path / "l.png").stat().st_size > 8_000
    assert parse(["plot", "d", "--kind", "utilization", "--out", "x.png", "--edges", "1,2"]).edges == (1.0, 2.0)
    with pytest.raises(SystemExit):
        parse(["plot", "d", "--kind", "utilization", "--out", "x.png", "--edges", "1,a"])
    with pytest.raises(SystemExit):
        parse(["plot", "d", "--kind", "pie", "--out", "x.png"])


@pytest.mark.parametrize("call, err, match", [
    (lambda d, t: report.load(t / "missing"), FileNotFoundError, "result_dir"),
    (lambda d, t: report.load(t), ValueError, "^result_dir: .* holds no run"),
    (lambda d, t: (t.joinpath("x.parquet").write_text("not parquet"), report.load(t)), ValueError,
     "^result_dir: '.*x\\.parquet' is not a parquet file: 11 bytes, fewer than the format's 12"),
    (lambda d, t: report.write_report(d["run"], t / "r.txt"), ValueError,
     r"^out: must end in \.html or \.md \(the report's format follows it\), got '.*r\.txt'$"),
    (lambda d, t: report.write_report(d["run"], t / "r.html", fmt="pdf"), ValueError, "^fmt:"),
    (lambda d, t: report.write_report(d["run"], t / "r.html", fmt="md"), ValueError,
     r"^out: must end in \.md for fmt='md', got '.*r\.html'$"),
    (lambda d, t: report.plot_dir(d["run"], "pie"), ValueError, "^kind:"),
    (lambda d, t: report.plot_dir(d["run"], "heatmap", metric="steps", x="a", y="b"), ValueError, "^kind:"),
    (lambda d, t: report.plot_dir(d["sweep"], "utilization"), ValueError, "^kind:"),
    (lambda d, t: report.plot_dir(d["sweep"], "heatmap", metric="steps", x="rollout_slots"), ValueError, "^y:"),
    (lambda d, t: report.plot_dir(d["sweep"], "lines", x="rollout_slots"), ValueError, "^metric:"),
    (lambda d, t: report.plot_dir(d["compare"], "utilization", pipeline="nope"), ValueError, "^pipeline:"),
    (lambda d, t: report.plot_dir(d["compare"], "utilization", t / "x.bmp"), ValueError, "^path:"),
])
def test_bad_input(dirs, tmp_path, call, err, match):
    with pytest.raises(err, match=match):
        call(dirs, tmp_path)


def test_cli_error_handling_through_main(dirs, tmp_path, capsys):
    """With the subcommands wired into cli.py, errors become exit code 2 and one line on stderr."""
    p = cli.build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    if "report" not in sub.choices:
        report.add_parser(sub)
    args = p.parse_args(["report", str(tmp_path / "missing")])
    with pytest.raises(FileNotFoundError):
        args.func(args)
