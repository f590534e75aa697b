"""rollsim's CPython-compatible generator against random.Random, bit for bit."""

import random

import pytest

from rollsim import _rollsim

SEEDS = [0, 1, 42, 2**31 - 1, 2**32, 2**40 + 5, 2**64 - 1, 123456789]


@pytest.mark.parametrize("seed", SEEDS)
def test_random_stream_is_bit_identical(seed):
    r = random.Random(seed)
    expected = [r.random() for _ in range(2000)]
    assert _rollsim.py_random_stream(seed, 2000).tolist() == expected


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mu,sigma", [(7.6, 1.0), (0.0, 0.25), (5.0, 2.0)])
def test_lognormvariate_is_bit_identical(seed, mu, sigma):
    r = random.Random(seed)
    expected = [r.lognormvariate(mu, sigma) for _ in range(1000)]
    assert _rollsim.py_lognormal_stream(seed, mu, sigma, 1000).tolist() == expected


@pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")  # draws only: no step needed
def test_empirical_python_mode_equals_random_choices():
    """In rng="python" mode an Empirical draw is random.Random(seed).choices(values, weights)[0]."""
    from rollsim import Empirical, FullyAsync, Scenario, simulate

    values = [100.0, 700.0, 2500.0, 9000.0]
    weights = [5, 1, 3, 1]
    for w in (None, weights):
        sc = Scenario(rollout_slots=8, batch_size=1000, horizon_s=50.0, lengths=Empirical(values, w),
                      pipeline=FullyAsync(), seed=3, rng="python")
        got = simulate(sc).samples["length_tokens"].to_list()
        r = random.Random(3)
        expected = [r.choices(values, w)[0] for _ in range(len(got))]
        assert got == expected
