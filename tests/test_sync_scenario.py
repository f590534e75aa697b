"""A scenario whose weight sync is a cluster (``Scenario(weight_sync=...)``): the derived numbers,
nothing the user gave lost (repr, TOML, describe, run keys), the refusal of a number and a cluster
together, and cluster files read with the scenario files' checks."""

from __future__ import annotations

import pickle

import pytest

from rollsim import Scenario, ScenarioError, simulate, sync
from rollsim.sweeps._keys import run_key, scenario_key

CL = sync.chapter_cluster("parallel", instances=1)


def test_a_cluster_gives_the_two_fields_of_its_estimate():
    est = sync.estimate(CL)
    sc = Scenario(weight_sync=CL)
    # every modelled topology writes in place: the whole sync pauses the rollout
    assert (sc.weight_sync_s, sc.rollout_pause_s) == (0.0, est.total_s) == (0.0, 2.50630016)
    assert isinstance(sc.weight_sync, sync.WeightSync) and sc.weight_sync.cluster == CL
    assert sc.weight_sync.estimate.total_s == est.total_s
    # the split of pipeline_fields, and an estimate or a stack estimate as the source
    ws = sync.WeightSync(CL, pause_s=0.107)
    assert ws.fields() == sync.pipeline_fields(est, pause_s=0.107) == {"weight_sync_s": est.total_s - 0.107,
                                                                       "rollout_pause_s": 0.107}
    assert Scenario(weight_sync=est).weight_sync == sync.WeightSync(CL)
    se = sync.estimate_stack(CL, "nemo-rl-reshard")
    sc2 = Scenario(weight_sync=se)
    assert sc2.weight_sync.stack == sync.STACKS["nemo-rl-reshard"] and sc2.rollout_pause_s == se.total_s


def test_the_cluster_stays_visible_repr_describe_toml_and_keys():
    sc = Scenario(weight_sync=sync.WeightSync(CL, "nemo-rl-reshard", pause_s=0.25), horizon_s=600.0)
    assert "weight_sync=WeightSync(cluster=Cluster(" in repr(sc) and "rollout_pause_s=0.25" in repr(sc)
    d = sc.describe()
    assert d["weight_sync"]["stack"] == "nemo-rl-reshard" and d["weight_sync"]["pause_s"] == 0.25
    assert d["weight_sync_s"] == sc.weight_sync.total_s - 0.25 and d["rollout_pause_s"] == 0.25
    # the engine gets the derived numbers
    assert sc.to_dict()["weight_sync_s"] == sc.weight_sync_s and "weight_sync" not in sc.to_dict()
    text = sc.to_toml()
    assert "\n[weight_sync]\n" in text and 'stack = "nemo-rl-reshard"' in text
    assert f"# weight_sync_s = {sc.weight_sync_s!r} and rollout_pause_s = 0.25 are derived" in text
    back = Scenario.from_toml_str(text)
    assert back == sc and back.weight_sync_s == sc.weight_sync_s
    assert pickle.loads(pickle.dumps(sc)) == sc and hash(back) == hash(sc)
    # run keys: the cluster is part of them; equal numbers from another cluster give another key
    by_numbers = Scenario(weight_sync_s=sc.weight_sync_s, rollout_pause_s=0.25, horizon_s=600.0)
    assert scenario_key(back) == scenario_key(sc) != scenario_key(by_numbers)
    assert run_key(sc, 0) != run_key(sc.replace(weight_sync=sync.WeightSync(CL, "nemo-rl-reshard", 0.2)), 0)
    # without weight_sync, keys are what they were
    assert scenario_key(Scenario(weight_sync=None)) == scenario_key(Scenario())


def test_a_non_preset_model_round_trips_through_toml():
    model = sync.ModelSpec.dense("my 7B", 7e9, n_tensors=300, layers=28).with_precision("bf16", sync.Precision("fp8", 0))
    cl = sync.Cluster(model, train=sync.TrainLayout(dp=8, cp=2), infer=sync.InferLayout(instances=3, tp=4),
                      hardware=sync.HARDWARE["h20"], software=sync.SOFTWARE["ideal"], topology="relay", fanout=2)
    assert sync.config.cluster_from_dict(sync.config.cluster_to_dict(cl)) == cl
    sc = Scenario(weight_sync=sync.WeightSync(cl, sync.STACKS["verl-ring"].replace(per_update_s=0.5)))
    assert Scenario.from_toml_str(sc.to_toml()) == sc


def test_simulating_with_the_cluster_is_simulating_with_its_numbers():
    sc = Scenario(horizon_s=1800.0, weight_sync=sync.WeightSync(CL, pause_s=1.0))
    plain = Scenario(horizon_s=1800.0, weight_sync_s=sc.weight_sync_s, rollout_pause_s=1.0)
    a, b = simulate(sc, record="summary").summary, simulate(plain, record="summary").summary
    assert a == b and a["steps"] > 0


def test_replace_derives_the_fields_again_and_refuses_a_number_beside_the_cluster():
    sc = Scenario(weight_sync=CL)
    eight = CL.replace(infer=sync.InferLayout(instances=8, tp=8))
    assert sc.replace(weight_sync=eight).rollout_pause_s == sync.estimate(eight).total_s
    assert sc.replace(**{"weight_sync.pause_s": 0.5}).weight_sync_s == sync.estimate(CL).total_s - 0.5
    assert sc.replace(seed=3).rollout_pause_s == sc.rollout_pause_s  # the derived numbers pass through
    gone = sc.replace(weight_sync=None)
    assert (gone.weight_sync, gone.weight_sync_s, gone.rollout_pause_s) == (None, 0.0, 0.0)
    assert sc.replace(weight_sync=None, weight_sync_s=2.0).weight_sync_s == 2.0
    with pytest.raises(ScenarioError, match=r"^weight_sync_s: is derived from weight_sync .* not both; got "
                                            r"weight_sync_s=2.0$"):
        sc.replace(weight_sync_s=2.0)
    with pytest.raises(ScenarioError, match=r"^rollout_pause_s: is derived from weight_sync"):
        Scenario(weight_sync=CL, rollout_pause_s=0.5)
    # the derived value itself is not a conflict
    assert Scenario(weight_sync=CL, rollout_pause_s=sync.estimate(CL).total_s) == sc


def test_cluster_files_are_read_like_scenario_files(tmp_path):
    p = tmp_path / "c.toml"
    p.write_bytes(b"\xef\xbb\xbftopology = \"parallel\"\n[model]\npreset = \"qwen3-4b\"\n")  # a BOM is skipped
    assert sync.load_cluster(p) == sync.Cluster(sync.MODELS["qwen3-4b"], topology="parallel")
    p.write_bytes(b"[model]\npreset = \"qwen3-4b\"\n[infer]\ntp = \xff\n")
    with pytest.raises(ScenarioError, match=r"^cluster file: '.*c\.toml' is not UTF-8 text \(line 4"):
        sync.load_cluster(p)
    with pytest.raises(FileNotFoundError):
        sync.load_cluster(tmp_path / "missing.toml")
    # a scenario's [weight_sync] table names its keys with the table's name
    with pytest.raises(ScenarioError, match=r"^weight_sync\.train\.tq: unknown key \(allowed: preset, tp, "):
        Scenario.from_toml_str('[weight_sync]\nmodel = { preset = "qwen3-4b" }\ntrain = { tq = 2 }')


def test_a_sweep_over_clusters_runs_each_with_its_own_sync_and_key():
    import rollsim

    eight = CL.replace(infer=sync.InferLayout(instances=8, tp=8))
    f = rollsim.sweep(Scenario(horizon_s=600.0), {"weight_sync": [CL, eight, None]}, progress=False)
    assert f.height == 3 and f["scenario_key"].n_unique() == 3 and f["error"].null_count() == 3
    # each run is the scenario with that cluster (or without a sync)
    ends = f["end_s"].to_list()
    plain = simulate(Scenario(horizon_s=600.0), record="summary").summary["end_s"]
    assert ends[2] == plain
    for end, c in zip(ends[:2], (CL, eight)):
        assert end == simulate(Scenario(horizon_s=600.0, weight_sync=c), record="summary").summary["end_s"]
