"""A cluster file read whole: ``rollsim.sync.load_weight_sync`` keeps the file's ``[stack]`` and
``pause_s`` (the same sync as the file's table given as ``weight_sync`` and as ``rollsim sync FILE``),
``load_cluster`` refuses a file it would lose them from, and ``rollsim sync FILE`` recommends only a
topology the cluster's placement can have."""

from __future__ import annotations

import argparse
import tomllib

import pytest

from rollsim import Scenario, ScenarioError, sync
from rollsim.sync import cli

#: Qwen3-30B-A3B, 16 training GPUs (dp 16) to 4 inference instances of TP 4, H100, NeMo-RL's stack.
MY = """topology = "parallel"
[model]
preset = "qwen3-30b-a3b"
[train]
dp = 16
[infer]
instances = 4
tp = 4
[hardware]
preset = "h100"
[stack]
preset = "nemo-rl-reshard"
"""


def _file(tmp_path, text=MY):
    p = tmp_path / "my.toml"
    p.write_text(text)
    return p


def _run(argv):
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers()
    cli.add_parser(sub)
    args = ap.parse_args(["sync", *argv])
    return args.func(args)


def test_the_file_and_its_table_give_the_same_sync(tmp_path, capsys):
    p = _file(tmp_path)
    ws = sync.load_weight_sync(p)
    assert ws.stack == sync.STACKS["nemo-rl-reshard"] and ws.pause_s == "all"
    with p.open("rb") as f:
        table = tomllib.load(f)
    a, b = Scenario(weight_sync=ws), Scenario(weight_sync=table)
    assert a == b and a.weight_sync == b.weight_sync == sync.WeightSync.from_doc(table)
    assert (a.weight_sync_s, a.rollout_pause_s) == (b.weight_sync_s, b.rollout_pause_s) == (0.0, 3.1894821885714286)
    # the stack rollsim sync FILE reports
    assert _run([str(p)]) == 0
    assert "stack nemo-rl-reshard (nccl-p2p): 3.189 s per update" in capsys.readouterr().out


def test_load_cluster_refuses_a_file_with_a_stack_rather_than_drop_it(tmp_path):
    """Before: load_cluster returned the cluster alone and the scenario took the topology's 0.307 s."""
    p = _file(tmp_path)
    with pytest.raises(ScenarioError, match=r"^stack: must be absent for load_cluster, which returns a Cluster "
                                            r"\(no stack, no pause_s\): the file's stack would be lost; read the "
                                            r"file with rollsim\.sync\.load_weight_sync\(path\)"):
        sync.load_cluster(p)
    # the file's cluster is the one load_weight_sync reads; without [stack] load_cluster reads it
    q = tmp_path / "bare.toml"
    q.write_text(MY.split("[stack]")[0])
    assert sync.load_cluster(q) == sync.load_weight_sync(p).cluster
    assert sync.load_weight_sync(q) == sync.WeightSync(sync.load_cluster(q))
    assert Scenario(weight_sync=sync.load_cluster(q)).rollout_pause_s == pytest.approx(0.307, abs=1e-3)


def test_pause_s_in_the_file(tmp_path, capsys):
    p = _file(tmp_path, 'pause_s = "pause_resume"\n' + MY)
    ws = sync.load_weight_sync(p)
    with p.open("rb") as f:
        assert ws == sync.WeightSync.from_doc(tomllib.load(f))
    assert ws.pause_s == "pause_resume" and ws.fields() == {"weight_sync_s": 3.1894821885714286, "rollout_pause_s": 0.0}
    with pytest.raises(ScenarioError, match=r"^pause_s: must be absent for load_cluster, which returns a Cluster "):
        sync.load_cluster(_file(tmp_path, "pause_s = 0.1\n" + MY.split("[stack]")[0]))
    p = _file(tmp_path, 'pause_s = "pause_resume"\n' + MY)
    assert _run([str(p)]) == 0
    assert "in a Scenario (pause_s = 'pause_resume'): weight_sync_s = 3.189 s, rollout_pause_s = 0.000 s\n" in (
        capsys.readouterr().out)
    p.write_text("pause_s = 9.0\n" + MY)
    with pytest.raises(ScenarioError, match=r"^pause_s: must be in \[0, the sync \(3\.1894821885714286 s\)\] "
                                            r"seconds, got 9\.0$"):
        sync.load_weight_sync(p)


def test_cli_recommends_only_a_topology_the_cluster_can_have(tmp_path, capsys):
    """16 training GPUs to 16 other inference GPUs: colocated (0.035 s) needs a different placement;
    before, the last line recommended it."""
    assert _run([str(_file(tmp_path))]) == 0
    lines = capsys.readouterr().out.splitlines()
    # the topologies run with the ideal software (no [software]): a lower bound, said as such, and the
    # recommendation is the fastest calibrated stack (before: "fastest topology ... broadcast (0.165 s)",
    # last, read as reachable while every stack takes 0.607 s or more)
    assert lines[-2] == ("fastest topology (ideal software: a lower bound, not a stack to run) for this cluster: "
                         "broadcast (0.165 s); the configured parallel is 0.141 s slower: transfer_s +0.153 s")
    assert lines[-1] == ("recommended: stack rdma-write (rdma-write), 0.607 s per update (0.519-0.607 s: its 1 "
                         "prediction of published timings off by +17.1 %, rollsim sync --validate); the fastest "
                         "calibrated stack on this cluster")
    i = lines.index("all topologies with this cluster, fastest first (slower: by how much, and the term that makes "
                    "it slower):")
    assert [s.split()[0] for s in lines[i + 1:i + 6]] == ["broadcast", "parallel", "relay", "naive", "colocated"]
    assert lines[i + 1].endswith("fastest")
    assert lines[i + 5] == ("  colocated      0.035 s  not ranked: needs a different placement (training and inference "
                            "on the same GPUs, hardware.colocated = true)")


def test_cli_ranks_colocated_on_a_colocated_cluster(tmp_path, capsys):
    text = MY.replace('preset = "h100"', 'preset = "h100"\ncolocated = true')
    assert _run([str(_file(tmp_path, text))]) == 0
    out = capsys.readouterr().out
    assert "not ranked" not in out
    assert out.splitlines()[-2].startswith("fastest topology (ideal software: a lower bound, not a stack to run) "
                                           "for this cluster: colocated (")
