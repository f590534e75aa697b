"""The documented range of every numeric input: the Scenario docstring states it, Python refuses
what is outside it naming the field, the unit and the range, and the engine (which validates again)
refuses the same values with the same message. Huge integers (``2**2000``, ``10**400``) are out of
range everywhere a number is accepted, never a raw OverflowError or a silent inf."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import rollsim
from rollsim import (Empirical, FullyAsync, LengthBalanced, OffPolicy, Scenario, ScenarioError, _rollsim, resources,
                     simulate)
from rollsim._check import bounded, fmt_bound, show
from rollsim.scenario import _BOUNDS

#: Fields whose engine key is their own (weight_sync_s and logprob_s_per_token travel summed into
#: train_step_s and train_s_per_token; their sums are checked apart).
ENGINE_FIELDS = [f for f in _BOUNDS if f not in ("weight_sync_s", "logprob_s_per_token", "decode_throughput_table")]
UNITS = {"tokens/s", "seconds", "seconds/token", "tokens", ""}


def needs(field: str) -> dict:
    """What a field needs besides itself to be checked (instances for the KV capacity and the
    batched slowdown)."""
    return {"slots_per_instance": 8} if field in ("kv_cache_tokens", "decode_slowdown_per_seq",
                                                 "decode_s_per_context_token") else {}


def python_error(**kw) -> str:
    with pytest.raises(ScenarioError) as e:
        Scenario(**kw)
    return str(e.value)


def engine_error(field: str, value: float, **kw) -> str:
    d = Scenario(horizon_s=60.0, **kw).to_dict()
    d[field] = value
    with pytest.raises(ScenarioError) as e:
        _rollsim.simulate(d, False, 1)
    return str(e.value)


def outside(lo: float, hi: float) -> list[float]:
    return [lo / 2 if lo > 0 else -1e-300, -1.0, hi * (1 + 1e-12), 1e308, math.nan, -math.inf] + (
        [] if hi == math.inf else [math.inf])


@pytest.mark.parametrize("field", ENGINE_FIELDS)
def test_python_and_the_engine_refuse_the_same_values_with_the_same_message(field):
    lo, hi, unit = _BOUNDS[field]
    for bad in outside(lo, hi):
        if field == "prefill_tokens_per_s" and bad == math.inf:
            continue  # free prefill
        message = python_error(**{field: bad}, **needs(field))
        assert message.startswith(f"{field}: must be in [{fmt_bound(lo)}, {fmt_bound(hi)}]{' ' + unit if unit else ''}")
        assert message.endswith(f", got {bad!r}"), message
        assert engine_error(field, bad, **needs(field)) == message


@pytest.mark.parametrize("field", ENGINE_FIELDS)
def test_the_ends_of_each_range_are_accepted_by_both(field):
    lo, hi, _ = _BOUNDS[field]
    if field == "kv_cache_tokens":
        lo = 16384.0 + 1  # must hold the longest answer
    for good in (lo, hi):
        sc = Scenario(**{field: good}, **needs(field))
        d = sc.to_dict()
        try:
            _rollsim.simulate(d, False, 1)  # validated, then stopped at once by max_samples
        except rollsim.RunLimitError:
            pass


def test_the_table_throughputs_are_bounded_in_both():
    for bad in (1e-300, 1e16, math.nan):
        message = python_error(slots_per_instance=2, decode_throughput_table=((1, 30.0), (2, bad)))
        assert message == f"decode_throughput_table: throughputs must be in [1e-6, 1e15] tokens/s; item 1 has {bad!r}"
        d = Scenario(slots_per_instance=2, decode_throughput_table=((1, 30.0), (2, 50.0)), horizon_s=60.0).to_dict()
        d["decode_throughput_table"] = [[1, 30.0], [2, bad]]
        with pytest.raises(ScenarioError) as e:
            _rollsim.simulate(d, False, 1)
        assert str(e.value) == message


def test_over_sampling_is_bounded_in_both():
    message = "pipeline.over_sampling: must be in [0, 1e6], or math.inf (keep every slot busy), got 1e+300"
    with pytest.raises(ScenarioError) as e:
        OffPolicy(1, over_sampling=1e300)
    assert str(e.value) == message
    d = Scenario(pipeline=OffPolicy(1, over_sampling=0.5), horizon_s=60.0).to_dict()
    d["pipeline"]["over_sampling"] = 1e300
    with pytest.raises(ScenarioError) as e:
        _rollsim.simulate(d, False, 1)
    assert str(e.value) == message
    assert OffPolicy(1, over_sampling=math.inf).over_sampling == math.inf


def test_summed_fields_stay_within_the_engine_range():
    assert python_error(train_step_s=6e11, weight_sync_s=6e11) == (
        "weight_sync_s: train_step_s + weight_sync_s (the fixed time of a step) must be at most 1e12 seconds, got "
        "600000000000.0 + 600000000000.0 = 1200000000000.0")
    assert python_error(train_s_per_token=600.0, logprob_s_per_token=600.0) == (
        "logprob_s_per_token: train_s_per_token + logprob_s_per_token (a step's time per token) must be at most 1e3 "
        "seconds/token, got 600.0 + 600.0 = 1200.0")
    Scenario(train_step_s=5e11, weight_sync_s=5e11, train_s_per_token=500.0, logprob_s_per_token=500.0)


def test_the_docstring_states_every_range():
    doc = Scenario.__doc__
    for field, (lo, hi, _) in _BOUNDS.items():
        if field == "decode_throughput_table":
            assert f"throughputs in [{fmt_bound(lo)}, {fmt_bound(hi)}] tokens/s" in doc
        else:
            assert f"    {field} : float, in [{fmt_bound(lo)}, {fmt_bound(hi)}]" in doc, field
    for field, hi in (("rollout_slots", "2**24"), ("batch_size", "2**24"), ("group_size", "2**24")):
        assert f"    {field} : int" in doc and hi in doc


@pytest.mark.parametrize("kw, message", [
    (dict(prompt_tokens="x"), "prompt_tokens: must be a number of tokens, got str 'x'"),
    (dict(decode_tokens_per_s=None), "decode_tokens_per_s: must be a number of tokens/s, got NoneType None"),
    (dict(train_s_per_token="1e-4"), "train_s_per_token: must be a number of seconds/token, got str '1e-4'"),
    (dict(horizon_s=[1.0]), "horizon_s: must be a number of seconds, got list [1.0]"),
    (dict(prefill_tokens_per_s="fast"),
     "prefill_tokens_per_s: must be a number of tokens/s, or math.inf (free prefill), got str 'fast'"),
])
def test_each_message_names_the_fields_unit(kw, message):
    assert python_error(**kw) == message


HUGE = [2**2000, 10**400, -(10**400), 10**5000]


@pytest.mark.parametrize("value", HUGE, ids=["2**2000", "10**400", "-10**400", "10**5000"])
def test_huge_integers_are_out_of_range_everywhere(value):
    shown = show(value)
    assert shown in ("2**2000", "10**400", "-10**400", "10**5000")
    calls = [
        lambda: Scenario(decode_tokens_per_s=value), lambda: Scenario(prompt_tokens=value),
        lambda: Scenario(horizon_s=value), lambda: Scenario(prefill_tokens_per_s=value),
        lambda: Scenario(slots_per_instance=8, kv_cache_tokens=value), lambda: Scenario(rollout_slots=value),
        lambda: Scenario(seed=value), lambda: Scenario(group_size=value), lambda: Scenario(slots_per_instance=value),
        lambda: Scenario(slots_per_instance=2, decode_throughput_table=((1, 30.0), (2, value))),
        lambda: Scenario(slots_per_instance=2, decode_throughput_table=((1, 30.0), (value, 30.0))),
        lambda: OffPolicy(value), lambda: OffPolicy(1, over_sampling=value), lambda: FullyAsync(max_staleness=value),
        lambda: FullyAsync(admission_eta=value), lambda: FullyAsync(max_lag_samples=value),
        lambda: FullyAsync(max_ready_groups=value), lambda: LengthBalanced(edges=(value,)),
        lambda: LengthBalanced(share=value), lambda: LengthBalanced(quotas=(value, 1, 1)),
        lambda: rollsim.sync.Hardware(nic_bytes_per_s=value), lambda: rollsim.sync.SoftwareStack(efficiency=value),
        lambda: rollsim.sync.InferLayout(instances=value), lambda: rollsim.sync.TensorGroup("w", 1, value),
        lambda: rollsim.sync.chapter_cluster("relay", 2).replace(fanout=value),
        lambda: rollsim.sync.cluster_from_dict({"model": {"params": value}}),
        lambda: rollsim.LogNormal(mu=value), lambda: rollsim.LogNormal(max_tokens=value),
        lambda: rollsim.LogNormal(group_correlation=value),
    ]
    for call in calls:
        with pytest.raises(ScenarioError) as e:
            call()
        assert str(e.value).endswith(shown) or f" {shown}" in str(e.value), str(e.value)


def test_show_and_fmt_bound():
    assert [show(v) for v in (2**2000, 10**400, 3 * 10**30, 7, -2, 1e-320, math.nan, np.float64(2.5))] == [
        "2**2000", "10**400", "about 3e+30", "7", "-2", "1e-320", "nan", "2.5"]
    assert [fmt_bound(v) for v in (0.0, 1e-6, 1e9, 1e3, 0.5, 16777216, 1.0)] == ["0", "1e-6", "1e9", "1e3", "0.5",
                                                                                   "16777216", "1"]
    with pytest.raises(ScenarioError, match=r"^x: must be in \[0, inf\], got 10\*\*400$"):
        bounded("x", 10**400, 0.0, math.inf)  # never inf


@pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")  # extreme ranges: runs without a step
def test_utilization_over_time_bounds_its_bins():
    res = simulate(Scenario(horizon_s=60.0))
    with pytest.raises(ScenarioError) as e:
        resources.utilization_over_time(res, 1e-9)
    end = res.summary["end_s"]
    assert str(e.value) == (f"bin_s: gives {math.ceil(end / 1e-9 - 1e-9)} bins over the run's {end:g} s, more than "
                            f"1000000; pick bin_s >= end_s / 1000000 (e.g. {float(f'{end / 1e6 * 1.01:.3g}'):g} s), "
                            f"got 1e-09")
    enough = float(f"{end / 1e6 * 1.01:.3g}")
    assert resources.utilization_over_time(res, enough).height <= 10**6
    for bad, message in ((0.0, "bin_s: must be finite and > 0, got 0.0"), (10**400, "bin_s: must be finite and > 0, got 10**400"),
                         ("1", "bin_s: must be a number of seconds, got str '1'"), (math.nan, "bin_s: must be finite and > 0, got nan")):
        with pytest.raises(ScenarioError) as e:
            resources.utilization_over_time(res, bad)
        assert str(e.value) == message


def test_empirical_and_engine_accept_the_whole_ranges_together():
    """All fields at an end of their ranges at once still validate in both (no hidden cross-check)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc = Scenario(decode_tokens_per_s=1e-6, train_step_s=1e12, train_s_per_token=1e3, horizon_s=1e-6,
                      rollout_pause_s=1e12, prompt_tokens=1e9, prefill_tokens_per_s=1e-6, slots_per_instance=256,
                      decode_slowdown_per_seq=1e6, kv_cache_tokens=1e15, lengths=Empirical([1.0, 1e7]),
                      pipeline=OffPolicy(1, over_sampling=1e6))
        s = simulate(sc, record="summary").summary
    assert all(math.isfinite(v) for k, v in s.items() if isinstance(v, float) and not k.startswith("staleness"))
