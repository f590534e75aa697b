"""Bad input raises ScenarioError (a ValueError) whose message names the field."""

import math

import pytest

from rollsim import Empirical, FullyAsync, LogNormal, OffPolicy, Scenario, ScenarioError, simulate

CASES = [
    (lambda: Scenario(rollout_slots=-1), "rollout_slots"),
    (lambda: Scenario(rollout_slots=0), "rollout_slots"),
    (lambda: Scenario(rollout_slots=2.5), "rollout_slots"),
    (lambda: Scenario(rollout_slots=True), "rollout_slots"),
    (lambda: Scenario(rollout_slots=2**25), "rollout_slots"),
    (lambda: Scenario(batch_size=0), "batch_size"),
    (lambda: Scenario(batch_size="512"), "batch_size"),
    (lambda: Scenario(decode_tokens_per_s=math.nan), "decode_tokens_per_s"),
    (lambda: Scenario(decode_tokens_per_s=0.0), "decode_tokens_per_s"),
    (lambda: Scenario(decode_tokens_per_s=math.inf), "decode_tokens_per_s"),
    (lambda: Scenario(train_step_s=-1.0), "train_step_s"),
    (lambda: Scenario(train_step_s=math.nan), "train_step_s"),
    (lambda: Scenario(weight_sync_s=-0.1), "weight_sync_s"),
    (lambda: Scenario(horizon_s=0.0), "horizon_s"),
    (lambda: Scenario(horizon_s=math.inf), "horizon_s"),
    (lambda: Scenario(seed=-1), "seed"),
    (lambda: Scenario(seed=2**64), "seed"),
    (lambda: Scenario(rng="mt"), "rng"),
    (lambda: Scenario(lengths=[1, 2, 3]), "lengths"),
    (lambda: Scenario(pipeline="sync"), "pipeline"),
    (lambda: LogNormal(sigma=-0.1), "lengths.sigma"),
    (lambda: LogNormal(sigma=math.nan), "lengths.sigma"),
    (lambda: LogNormal(mu=math.inf), "lengths.mu"),
    (lambda: LogNormal(max_tokens=0), "lengths.max_tokens"),
    (lambda: LogNormal(mu="7"), "lengths.mu"),
    (lambda: Empirical([]), "lengths.values"),
    (lambda: Empirical([0.0, 5.0]), "lengths.values"),
    (lambda: Empirical([1.0, math.nan]), "lengths.values"),
    (lambda: Empirical([[1.0, 2.0]]), "lengths.values"),
    (lambda: Empirical(["a"]), "lengths.values"),
    (lambda: Empirical([1.0, 2.0], [0, 0]), "lengths.weights"),
    (lambda: Empirical([1.0, 2.0], [1.0]), "lengths.weights"),
    (lambda: Empirical([1.0, 2.0], [1.0, -1.0]), "lengths.weights"),
    (lambda: Empirical([1.0], max_tokens=0.5), "lengths.max_tokens"),
    (lambda: OffPolicy(k=-1), "pipeline.k"),
    (lambda: FullyAsync(max_staleness=-1), "pipeline.max_staleness"),
    (lambda: FullyAsync(max_staleness=1.5), "pipeline.max_staleness"),
    (lambda: Scenario().replace(batch=3), "batch"),
    (lambda: Scenario().replace(**{"pipeline.k": 3}), "pipeline.k"),
    (lambda: simulate(Scenario(), record="rows"), "record"),
    (lambda: simulate(Scenario(), max_samples=0), "max_samples"),
    (lambda: simulate("scenario"), "scenario"),
    (lambda: simulate(Scenario(), record="summary").samples, "record"),
]


@pytest.mark.parametrize("make,field", CASES, ids=[f"{i}-{c[1]}" for i, c in enumerate(CASES)])
def test_bad_input_names_the_field(make, field):
    with pytest.raises(ScenarioError) as e:
        make()
    assert str(e.value).startswith(field + ":"), str(e.value)
    assert isinstance(e.value, ValueError)


def test_engine_validates_dicts_too():
    """The engine re-checks what it receives (the bindings' own boundary)."""
    from rollsim import _rollsim

    d = Scenario().to_dict()
    d["rollout_slots"] = 0
    with pytest.raises(ScenarioError, match="^rollout_slots:"):
        _rollsim.simulate(d)
    d = Scenario().to_dict()
    d["lengths"] = {"kind": "lognormal", "mu": 7.6, "sigma": -1.0, "max_tokens": 10.0}
    with pytest.raises(ScenarioError, match="^lengths.sigma:"):
        _rollsim.simulate(d)
    d = Scenario(horizon_s=60.0).to_dict()
    del d["seed"]  # a missing key takes the schema's default
    assert repr(_rollsim.simulate(d, False)["summary"]) == repr(_rollsim.simulate(dict(d, seed=0), False)["summary"])
    d["seed"] = -1
    with pytest.raises(ScenarioError, match=r"^seed: must be in \[0, 2\*\*64 - 1\], got -1$"):
        _rollsim.simulate(d)
    d = Scenario().to_dict()
    d["pipeline"] = {"kind": "bogus"}
    with pytest.raises(ScenarioError, match="^pipeline.kind:"):
        _rollsim.simulate(d)
