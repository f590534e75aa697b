"""A new user's first hours: a verl Megatron config's actor layout reaches the deployment's training
model (it was noted as ignored), ``rollsim split --model`` does not recommend a trainer too small to
hold the model's training state, and the seconds flags refuse a value with a unit."""

from __future__ import annotations

import math

import pytest

import rollsim
from rollsim import FullyAsync, Scenario, resources
from rollsim.cli import main

_YAML = """data: {train_batch_size: 16, max_response_length: 4096}
actor_rollout_ref:
  model: {path: Qwen/Qwen3-30B-A3B}
  rollout: {n: 4, tensor_model_parallel_size: 2}
  actor:
    strategy: megatron
    megatron: {tensor_model_parallel_size: 2, pipeline_model_parallel_size: 2, expert_model_parallel_size: 8}
trainer: {nnodes: 4, n_gpus_per_node: 8}
"""
_MEG = "actor_rollout_ref.actor.megatron."


def _notes(imp):
    return {n.option: (n.kind, n.became) for n in imp.notes}


def test_verl_megatron_layout_reaches_the_deployment(tmp_path):
    path = tmp_path / "meg.yaml"
    path.write_text(_YAML)
    imp = rollsim.configs.load(path, gpu="H100")
    assert imp.deployment.train_options == {"tensor_parallel": 2, "pipeline_parallel": 2, "expert_parallel": 8}
    notes = _notes(imp)
    assert notes[_MEG + "expert_model_parallel_size"] == (
        "read", "deployment.train_options['expert_parallel'] = 8 (the deployment's training model: a what-if's "
        "training GPU change keeps the layout)")
    # the training model prices that layout, not TP1 PP1 EP1
    tok = dict(tokens=16 * 4 * 2000.0, sequences=64)
    laid = imp.deployment.train_step_s(**tok)["total"]
    plain = imp.deployment.train_step_s(**tok, tensor_parallel=1, pipeline_parallel=1, expert_parallel=1)["total"]
    assert laid != pytest.approx(plain, rel=1e-3)
    # without an accelerator there is no deployment: the options are noted as such, not lost
    notes = _notes(rollsim.configs.load(path))
    assert notes[_MEG + "tensor_model_parallel_size"][0] == "ignored"
    assert "there is none without an accelerator" in notes[_MEG + "tensor_model_parallel_size"][1]


def test_fsdp_config_keeps_no_megatron_options(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_text(_YAML.replace("strategy: megatron", "strategy: fsdp"))
    imp = rollsim.configs.load(path, gpu="H100")
    assert imp.deployment.train_options == {}
    assert _notes(imp)[_MEG + "tensor_model_parallel_size"][0] == "ignored"


def test_gpu_split_excludes_too_few_training_gpus():
    sc = Scenario(pipeline=FullyAsync(max_staleness=2))
    kw = dict(gpus_per_instance=1, slots_per_instance=64, gpu_s_per_token=0.0005, rollout_gpus=[2, 3, 4])
    free = resources.gpu_split(sc, 6, **kw)
    assert free.best["rollout_gpus"] == 3 and free.limits["min_train_gpus"] is None
    held = resources.gpu_split(sc, 6, min_train_gpus=4, **kw)  # 3 rollout + 3 training no longer qualifies
    assert held.table["excluded_because"].to_list() == [
        None, "3 training GPUs < min_train_gpus 4",
        "drop_fraction 18.7% > max_drop_fraction 5.0%; 2 training GPUs < min_train_gpus 4"]
    assert held.best["rollout_gpus"] == 2 and held.limits["min_train_gpus"] == 4
    assert held.verdict.endswith("(limits: at least 6 training steps, generation does not outrun training, "
                                 "drop_fraction <= 5.0%, at least 4 training GPUs)")
    # the same runs: only the recommendation's limits differ
    assert held.table["tokens_trained_per_s"].to_list() == free.table["tokens_trained_per_s"].to_list()


class Seen(Exception):
    """Raised by :func:`_capture_split`'s stand-in for ``resources.gpu_split`` once it has its arguments."""


def _capture_split(monkeypatch) -> dict:
    """The keyword arguments ``rollsim split`` hands ``resources.gpu_split`` (the search itself not run)."""
    seen: dict = {}

    def capture(base, gpus, **kw):
        seen.update(kw)
        raise Seen

    monkeypatch.setattr(resources, "gpu_split", capture)
    return seen


def test_split_model_sets_the_training_state_limit(monkeypatch):
    seen = _capture_split(monkeypatch)
    with pytest.raises(Seen):
        main(["split", "--gpus", "32", "--model", "Qwen3-30B-A3B", "--gpu", "H100"])
    from rollsim.hardware.specs import model
    state = model("Qwen3-30B-A3B").total_params * 18.0
    assert seen["min_train_gpus"] == math.ceil(state / (80 * 2**30)) == 7
    assert seen["names"]["min_train_gpus"] == "--min-train-gpus"
    assert seen["names"]["min_train_gpus_why"] == (
        " (the training state of Qwen3-30B-A3B (30.5B parameters x 18 bytes = 512 GiB: weights, gradients, Adam; it "
        "needs at least 7 x H100 of 80 GiB, before activations); a trainer that offloads it: --min-train-gpus 1)")
    seen.clear()
    with pytest.raises(Seen):  # given: kept, without the words of the default
        main(["split", "--gpus", "32", "--model", "Qwen3-30B-A3B", "--gpu", "H100", "--min-train-gpus", "1"])
    assert seen["min_train_gpus"] == 1 and "min_train_gpus_why" not in seen["names"]
    seen.clear()
    with pytest.raises(Seen):  # without a model: no limit
        main(["split", "--gpus", "8", "--gpu-s-per-token", "0.01"])
    assert "min_train_gpus" not in seen



def test_deployment_gpu_split_sets_the_training_state_limit_too(monkeypatch):
    """``Deployment.gpu_split`` applies the command line's training-state bound (7 H100s for Qwen3-30B-A3B's
    512 GiB) unless ``min_train_gpus`` is given: the Python and CLI paths recommend the same split."""
    from rollsim import Scenario
    from rollsim.hardware import Deployment

    seen: dict = {}
    monkeypatch.setattr(resources, "gpu_split", lambda base, gpus, **kw: seen.update(kw))
    d = Deployment(model="Qwen3-30B-A3B", gpu="H100", rollout_gpus=1)
    d.gpu_split(Scenario(group_size=8), 32)
    assert seen["min_train_gpus"] == 7
    d.gpu_split(Scenario(group_size=8), 32, min_train_gpus=1)
    assert seen["min_train_gpus"] == 1

def _args(**kw):
    import argparse
    return argparse.Namespace(**{"pipeline": "fully-async", "max_staleness": None, "max_staleness_mean": None, **kw})


def test_split_warns_when_nothing_bounds_the_recommended_staleness(capsys):
    from rollsim.cli import _warn_unbounded_staleness

    best = {"placement": "disaggregated", "staleness_mean": 43.05, "staleness_max": 69}
    _warn_unbounded_staleness(_args(), best)
    assert capsys.readouterr().err == (
        "rollsim: warning: the recommended split trains on answers 43.0 policy versions old on average (max 69): "
        "nothing bounds staleness in this search; give --max-staleness N (AReaL's max_head_offpolicyness; verl's "
        "staleness_threshold bounds it too) or --max-staleness-mean X to recommend under a bound\n")
    for args, b in ((_args(max_staleness=4), best), (_args(max_staleness_mean=50.0), best),
                    (_args(pipeline="one-step"), best), (_args(), dict(best, staleness_mean=1.9)), (_args(), None),
                    (_args(), dict(best, placement="colocated"))):
        _warn_unbounded_staleness(args, b)
        assert capsys.readouterr().err == ""


def test_split_cli_warns_on_an_uncapped_stale_recommendation(capsys):
    args = ["split", "--gpus", "8", "--gpu-s-per-token", "0.0002", "--slots-per-instance", "256", "--horizon-s", "3600"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "best: 3 rollout + 5 training GPUs" in out
    assert err.startswith("rollsim: warning: the recommended split trains on answers 2.3 policy versions old on "
                          "average (max 10): nothing bounds staleness in this search")
    assert main([*args, "--max-staleness", "4"]) == 0
    assert capsys.readouterr().err == ""


def test_hardware_says_whether_the_training_state_fits(capsys):
    base = ["hardware", "--model", "Qwen3-30B-A3B", "--gpu", "H100", "--rollout-gpus", "16", "--train-tokens", "1.6e6"]
    assert main([*base, "--train-gpus", "5"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "  the training state of Qwen3-30B-A3B (30.5B parameters x 18 bytes = 512 GiB: weights, gradients, Adam; "
        "102.4 GiB per GPU on 5 GPUs; it needs at least 7 x H100 of 80 GiB, before activations): does not fit (or a "
        "trainer that offloads it)")
    assert main([*base, "--train-gpus", "16"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith(
        "32.0 GiB per GPU on 16 GPUs; it needs at least 7 x H100 of 80 GiB, before activations): fits")


def test_validate_help_lists_the_case_names(capsys):
    from rollsim.validation import CASE_NAMES

    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"run only this case (repeatable): {', '.join(CASE_NAMES)} (rollsim.validation.CASE_NAMES)" in out


def test_split_colocated_switch_auto_is_the_deployments(monkeypatch):
    from rollsim.hardware import Deployment

    seen = _capture_split(monkeypatch)
    with pytest.raises(Seen):
        main(["split", "--gpus", "16", "--model", "Qwen3-8B", "--gpu", "H100", "--colocated-switch-s", "auto"])
    want = Deployment(model="Qwen3-8B", gpu="H100", rollout_gpus=16, rollout_tp=1, train_gpus=16,
                      colocated=True).switch_s()["total"]
    assert seen["colocated_switch_s"] == pytest.approx(want, rel=1e-12) and 0.1 < want < 10
    seen.clear()
    with pytest.raises(Seen):  # a number is kept as given
        main(["split", "--gpus", "16", "--gpu-s-per-token", "0.004", "--colocated-switch-s", "15"])
    assert seen["colocated_switch_s"] == 15.0
