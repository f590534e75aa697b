"""The published settings behind the stacks' table (rollsim.sync.calibration), the mechanisms they
check, and the retired SoftwareStack fits: ``rollsim sync --validation`` is the stacks' table now,
and a cluster file's ``[software] preset`` is a fitted stack (one model of real stacks)."""

import dataclasses
import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

import rollsim.sync as rs
from rollsim.sync import calibration as cal
from rollsim.sync.cli import VALIDATION_NOTE, main
from rollsim.sync.validation import ROWS


def _cluster(setting):
    return next(r.cluster for r in ROWS if r.setting == setting)


def test_the_old_fits_are_retired_and_validation_is_the_stacks_table():
    for name in ("STACKS", "FIT_PARAMS", "fit_stack", "validation_table", "MEASUREMENTS"):
        assert not hasattr(cal, name), name
    outs = {}
    for flag in ("--validate", "--validation"):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            assert main([flag]) == 0
        outs[flag] = (out.getvalue(), err.getvalue())
    assert outs["--validation"][0] == outs["--validate"][0] and "predictions within 25 %" in outs["--validate"][0]
    assert outs["--validation"][1] == VALIDATION_NOTE + "\n" and outs["--validate"][1] == ""


def test_a_software_preset_is_the_fitted_stack(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('topology = "parallel"\n[model]\npreset = "qwen3-4b"\n[software]\npreset = "nemo-rl-reshard"\n'
                 "per_update_s = 0.5\n")
    c = rs.load_cluster(f)
    want = rs.STACKS["nemo-rl-reshard"].software()
    assert c.software == dataclasses.replace(want, per_update_s=0.5)
    assert (c.software.efficiency, c.software.per_tensor_s) == (0.336, 1.13e-4)
    # every stack is a preset, the new ones included
    f.write_text('[model]\npreset = "qwen3-4b"\n[software]\npreset = "cuda-ipc"\n')
    assert rs.load_cluster(f).software == rs.STACKS["cuda-ipc"].software()


def test_the_chapter_table_does_not_depend_on_the_stacks():
    t = rs.chapter_table()
    relay = t.filter(design="relay")["total_s"].to_list()
    assert [round(x, 2) for x in relay] == [2.51, 2.56, 2.68]


def test_nemo_per_tensor_term_counts_busiest_rank():
    # 30B BF16: a training rank stacks 16 local experts x 24 layers x 3 = 1,152 expert views; the
    # 435 misc tensors are loaded by every inference rank
    c = _cluster("Qwen3-30B-A3B BF16, EP8xPP2 -> TP8xDP2, H100")
    assert rs.estimate(c).tensors_charged == 1152 + 435
    p = rs.plan(c, record_transfers=False)
    assert p.src_tensors.max() == 1152 and p.dst_tensors.max() == 144  # grouped: 48 layers x 3


def test_issue_169_constants_fall_in_published_ranges():
    # two rows, two constants (exact solve): the per-bucket cost lands in the published SGLang IPC
    # round trip (20-41 ms; cf. sgl-project/sglang PR 7937); the per-tensor cost is 0.6 ms
    r = cal.issue_169()
    assert r["predicted"] == pytest.approx(r["measured"], rel=1e-6)
    assert 0.020 <= r["per_bucket_s"] <= 0.041
    assert 0.4e-3 < r["per_tensor_s"] < 0.8e-3
    assert r["buckets_30b"] == 114 and r["tensors_30b"] == 18867 and r["tensors_16b"] == 5291
    # the cuda-ipc stack is fitted on the same two rows with its own terms: the same constants
    st = rs.STACKS["cuda-ipc"]
    assert st.per_bucket_s == pytest.approx(r["per_bucket_s"], rel=0.01)
    assert st.per_tensor_s == pytest.approx(r["per_tensor_s"], rel=0.01)


def test_plan_groups_only_split_parallel():
    # other topologies ignore the split: the relay moves the same bytes with or without it
    c = _cluster("Qwen3-30B-A3B BF16, EP8xPP2 -> TP8xDP2, H100").replace(topology="relay")
    plain = c.replace(software=dataclasses.replace(c.software, plan_groups=(), grouped_experts=False))
    assert rs.estimate(c).total_s == pytest.approx(rs.estimate(plain).total_s)
    with pytest.raises(ValueError, match="^plan_groups"):
        rs.SoftwareStack(plan_groups="mlp.experts")
