"""Prefill as a shared resource of an instance (``Scenario.prefill_mode = "shared"``): hand-worked
goldens of one request prefilling while another decodes, the default unchanged, and the field's
round trips (TOML, the command line)."""

from __future__ import annotations

import math

import pytest

from rollsim import Empirical, FullyAsync, Scenario, Synchronous, simulate


def two(budget: int = 101, **kw: object) -> Scenario:
    """One instance of two slots at 10 tokens/s per sequence whatever the batch (0.1 s a step), two
    answers of 50 tokens, 1,000-token prompts prefilled at 10,000 tokens/s by the instance."""
    fields: dict = dict(rollout_slots=2, slots_per_instance=2, decode_tokens_per_s=10.0, batch_size=2,
                        train_step_s=100.0, horizon_s=50.0, lengths=Empirical([50.0]), pipeline=Synchronous(),
                        prompt_tokens=1000.0, prefill_tokens_per_s=10_000.0, prefill_mode="shared",
                        max_num_batched_tokens=budget)
    fields.update(kw)
    return Scenario(**fields)


def finishes(sc: Scenario) -> list[float]:
    return simulate(sc).samples.sort("sample_id")["finish_s"].to_list()


def test_one_request_prefills_while_another_decodes():
    # A prefills alone (0.1 s); then each step carries A's token and 100 of B's prompt tokens and lasts
    # 0.1 + 100 / 10,000 = 0.11 s: B's prompt ends at 0.1 + 10 x 0.11 = 1.2 s, A has decoded 10 tokens.
    # Then both decode at 10 tokens/s: A ends at 1.2 + 40 / 10 = 5.2 s, B at 1.2 + 5 = 6.2 s.
    assert finishes(two()) == pytest.approx([5.2, 6.2], rel=1e-12)
    # one step takes B's whole prompt (0.2 s, one token of A): A at 5.2 s, B at 0.3 + 5 = 5.3 s
    assert finishes(two(1001)) == pytest.approx([5.2, 5.3], rel=1e-12)
    # per slot (the default), each prompt takes its own 0.1 s beside the other: both at 5.1 s
    per_slot = two().replace(prefill_mode="per_slot", max_num_batched_tokens=8192)
    assert finishes(per_slot) == pytest.approx([5.1, 5.1], rel=1e-12)


def test_the_decoding_batch_sets_both_speeds():
    # 10 tokens/s alone, 8 each for two: as above to 1.2 s, then A's last 40 tokens at 8 tokens/s (to
    # 6.2 s), B's last 10 alone at 10 tokens/s (to 7.2 s)
    sc = two(decode_throughput_table=((1, 10.0), (2, 16.0)))
    assert finishes(sc) == pytest.approx([6.2, 7.2], rel=1e-12)


def test_long_prompts_stall_decoding():
    # 10,000-token prompts, 1,001 tokens a step: A prefills alone (1 s); B's prompt takes 10 steps of
    # 0.1 + 1,000 / 10,000 = 0.2 s (to 3 s), in which A decodes at half its speed (10 tokens in 2 s);
    # then A's last 40 tokens end at 7 s, B's 50 at 8 s
    assert finishes(two(1001, prompt_tokens=10_000.0)) == pytest.approx([7.0, 8.0], rel=1e-12)


def test_default_is_per_slot_and_left_out_of_the_wire_dict():
    sc = Scenario()
    assert (sc.prefill_mode, sc.max_num_batched_tokens) == ("per_slot", 8192)
    assert "prefill_mode" not in sc.to_dict() and "max_num_batched_tokens" not in sc.to_dict()
    assert two().to_dict()["prefill_mode"] == "shared"


def test_free_prefill_shared_equals_per_slot_bit_for_bit():
    base = dict(rollout_slots=64, slots_per_instance=16, decode_slowdown_per_seq=0.01, group_size=4,
                batch_size=128, prompt_tokens=500.0, horizon_s=3600.0, pipeline=FullyAsync(max_staleness=2), seed=3)
    a = simulate(Scenario(**base), record="summary").summary
    b = simulate(Scenario(**base, prefill_mode="shared"), record="summary").summary
    assert repr(a) == repr(b)
    assert math.isinf(Scenario(**base).prefill_tokens_per_s)


def test_round_trips_through_toml_and_the_command_line(tmp_path):
    sc = two()
    assert Scenario.from_toml(_write(tmp_path, sc.to_toml())) == sc


def _write(tmp_path, text: str):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


def with_context(slope: float, slots: int = 1) -> Scenario:
    """Answers of 1,000 tokens after 1,000-token prompts (free prefill), at 10 tokens/s without
    context (0.1 s a step), ``slope`` seconds more per step per token of context, one batch."""
    return Scenario(rollout_slots=slots, slots_per_instance=slots, batch_size=slots, decode_tokens_per_s=10.0,
                    train_step_s=1e5, horizon_s=1e6, lengths=Empirical([1000.0]), pipeline=Synchronous(),
                    prompt_tokens=1000.0, decode_s_per_context_token=slope)


def test_context_slope_against_the_integral():
    # token j (context 1,000 + j) takes 0.1 + 1e-4 (1,000 + j) s: 100 + 1e-4 (1,000^2 + 1,000^2 / 2)
    # = 250 s; two sequences side by side read both contexts: 100 + 2 x 150 = 400 s
    assert finishes(with_context(1e-4))[:1] == pytest.approx([250.0], rel=5e-4)
    assert finishes(with_context(1e-4, slots=2))[:2] == pytest.approx([400.0, 400.0], rel=5e-4)
    assert finishes(with_context(0.0))[:1] == [100.0]
