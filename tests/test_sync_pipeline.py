"""The weight sync inside the pipeline simulation, on hand-worked timelines: the sync split into
the pause the rollout sees and the transfer that overlaps decoding (rollsim.sync.pipeline_fields),
the sync cadence (Scenario.sync_every), when generation resumes around a sync
(FullyAsync.lag_release) and which version a staleness cap is checked against
(Scenario.staleness_check). Every answer is 30 tokens at 30 tokens/s: one second on its slot."""

from __future__ import annotations

import pytest

from rollsim import FullyAsync, LogNormal, Scenario, ScenarioError, Synchronous, simulate
from rollsim import sync


def one_slot(step_s: float, horizon_s: float, **kw) -> Scenario:
    """One slot, one sample per step, answers of exactly one second (30 tokens), steps of ``step_s``."""
    return Scenario(rollout_slots=1, decode_tokens_per_s=30.0, batch_size=1, train_step_s=step_s,
                    horizon_s=horizon_s, lengths=LogNormal(mu=20.0, sigma=0.0, max_tokens=30.0), **kw)


def staleness(sc: Scenario) -> list[int]:
    return simulate(sc).steps["staleness_max"].to_list()


@pytest.mark.parametrize("sync_s, pause_s", [(6.22, 5.10), (1.21, 0.107)], ids=["before the fix", "after the fix"])
def test_marin_s_pause_inside_its_sync(sync_s, pause_s):
    # marin-community/marin issue 8955: median generation pause 5.10 s inside a 6.22 s sync before
    # its fix, 0.107 s inside 1.21 s after. 10 s of compute per step: s0 runs 0-1, step 0 trains
    # it from 1 to 11 + the transfer; s1 ... s11 run 1-12 on version 0; s12 starts at 12 and is in
    # flight when the weights land (at 12.62 before, 12.103 after), so it stops for the pause.
    fields = sync.pipeline_fields(sync_s, pause_s=pause_s)
    assert fields == {"weight_sync_s": sync_s - pause_s, "rollout_pause_s": pause_s}
    assert fields["weight_sync_s"] + fields["rollout_pause_s"] == pytest.approx(sync_s, abs=1e-15)
    r = simulate(one_slot(10.0, 20.0, **fields))
    steps = r.steps
    # the trainer's step: compute + the transfer; the version lands at its end
    assert steps["end_s"][0] == pytest.approx(1.0 + 10.0 + fields["weight_sync_s"], abs=1e-12)
    s = r.samples.sort("sample_id")
    land = steps["end_s"][0]
    # the sample in flight when the weights land: generation stopped for the pause only
    inflight = s.filter((s["start_s"] < land) & (s["finish_s"] > land)).row(0, named=True)
    assert inflight["sample_id"] == 12 and inflight["start_s"] == 12.0
    assert inflight["finish_s"] - inflight["start_s"] - 1.0 == pytest.approx(pause_s, abs=1e-12)
    # the pause is what the slot loses: a small share of the sync after the fix
    assert pause_s / sync_s == pytest.approx(0.82 if pause_s > 1 else 0.088, abs=0.005)


def test_an_estimate_splits_into_the_two_fields():
    cl = sync.chapter_cluster("parallel", instances=1)
    est = sync.estimate(cl)
    whole = sync.pipeline_fields(cl)
    assert whole == {"weight_sync_s": 0.0, "rollout_pause_s": est.total_s}  # in place: all of it pauses
    assert sync.pipeline_fields(est) == whole
    term = est.breakdown["pause_resume_s"]
    assert sync.pipeline_fields(est, pause_s="pause_resume") == {"weight_sync_s": est.total_s - term,
                                                               "rollout_pause_s": term}
    sc = Scenario().replace(**sync.pipeline_fields(est, pause_s=0.5))
    assert sc.weight_sync_s == est.total_s - 0.5 and sc.rollout_pause_s == 0.5


def test_sync_every_two_steps_trains_on_the_version_the_rollout_had():
    # 0.5 s steps: the sample trained by step k started at t = k with the rollout's version then.
    # sync_every=1: version k - 1 (loaded at k - 0.5): staleness 1 from step 1 on. sync_every=2:
    # the rollout loads versions 2, 4, ... only (at 2.5, 4.5, ...): step 1 trains version 0 (1),
    # step 2 version 0 (2), step 3 version 2 (1), step 4 version 2 (2).
    sc = one_slot(0.5, 6.2)
    assert staleness(sc) == [0, 1, 1, 1, 1, 1]
    assert staleness(sc.replace(sync_every=2)) == [0, 1, 2, 1, 2, 1]
    assert simulate(sc.replace(sync_every=2)).summary["staleness_mean"] == 7 / 6
    # synchronous: generate 0-1 (v0), train 1-1.5, generate 1.5-2.5 with v0 (v1 is not synced), ...
    assert staleness(sc.replace(pipeline=Synchronous(), sync_every=2)) == [0, 1, 0, 1, 0]
    assert staleness(sc.replace(pipeline=Synchronous())) == [0, 0, 0, 0, 0]


def test_resuming_before_the_weights_land_makes_an_on_policy_config_one_step_off_policy():
    # verl-project/verl#4449 and #6780: staleness_threshold = 0 (at most one batch started and not
    # trained: max_lag_samples = batch_size). 0.3 s of compute + a sync of 0.2 s (0.05 s paused).
    # "take": generation resumes when the trainer takes the batch, with the weights the rollout
    # has: one step off-policy. "sync": it waits until the step's weights have landed: on-policy.
    fields = sync.pipeline_fields(0.2, pause_s=0.05)
    gate = lambda release: one_slot(0.3, 6.2, pipeline=FullyAsync(max_lag_samples=1, lag_release=release), **fields)  # noqa: E731
    assert staleness(gate("take")) == [0, 1, 1, 1, 1, 1]
    early = simulate(gate("take")).samples
    assert early["version_start"].to_list()[:4] == [0, 0, 1, 2]
    waited = simulate(gate("sync"))
    assert waited.steps["staleness_max"].to_list() == [0, 0, 0, 0, 0]
    # s0 0-1, step 0 1-1.45 (0.3 + 0.15 transfer); s1 is submitted when the weights land (1.45),
    # decodes after the 0.05 s pause and finishes at 2.5 with version 1; step 1 2.5-2.95, ...
    assert waited.samples["start_s"].to_list()[:3] == pytest.approx([0.0, 1.45, 2.95], abs=1e-12)
    assert waited.samples["finish_s"].to_list()[:3] == pytest.approx([1.0, 2.5, 4.0], abs=1e-12)
    assert waited.samples["version_start"].to_list()[:3] == [0, 1, 2]


def test_the_emission_time_check_lets_two_version_old_groups_through_a_cap_of_one():
    # radixark/miles PR 2296. 1.6 s steps, cap 1: s1 runs 1-2 on version 0 and is trained by step 1
    # (2.6-4.2); s2 runs 2-3, started on version 0 and emitted on version 1 (loaded at 2.6); s3
    # runs 3-4 on version 1. At 4.2 (version 2) s2 is 2 versions old from its start, 1 from its
    # emission.
    sc = one_slot(1.6, 4.5, pipeline=FullyAsync(max_staleness=1))
    start = simulate(sc)
    assert start.steps["staleness_max"].to_list() == [0, 1, 1]  # s2 dropped; step 2 trains s3
    assert start.summary["samples_dropped"] == 1
    finish = simulate(sc.replace(staleness_check="finish"))
    assert finish.steps["staleness_max"].to_list() == [0, 1, 2]  # step 2 trains s2: 2 versions old
    assert finish.summary["samples_dropped"] == 0
    s2 = finish.samples.filter(finish.samples["sample_id"] == 2).row(0, named=True)
    assert (s2["staleness"], s2["staleness_at_finish"]) == (2, 1)


def test_defaults_are_today_s_behaviour():
    sc = Scenario(horizon_s=900.0)
    assert sc.sync_every == 1 and sc.staleness_check == "start"
    assert "sync_every" not in sc.to_dict() and "staleness_check" not in sc.to_dict()
    assert simulate(sc.replace(sync_every=1)).summary == simulate(sc).summary


@pytest.mark.parametrize("kw, message", [
    ({"sync_every": 0}, "sync_every: must be in [1, 16777216], got 0"),
    ({"staleness_check": "end"}, "staleness_check: must be 'start' or 'finish', got 'end'"),
])
def test_refusals(kw, message):
    with pytest.raises(ScenarioError) as e:
        Scenario(**kw)
    assert str(e.value) == message


def test_verl_trigger_parameter_sync_step_is_the_sync_cadence():
    # volcengine/verl verl/experimental/fully_async_policy/README.md: the trainer syncs after
    # trigger_parameter_sync_step local updates; the rollouter produces at most
    # (1 + staleness_threshold) * trigger * batch samples per window. Four one-second answers on
    # four slots, 0.5 s steps of four samples.
    from rollsim import presets

    base = Scenario(rollout_slots=4, decode_tokens_per_s=30.0, batch_size=4, train_step_s=0.5, horizon_s=40.0,
                    lengths=LogNormal(mu=20.0, sigma=0.0, max_tokens=30.0))
    assert presets.verl_fully_async(scenario=base) == presets.verl_fully_async(trigger_parameter_sync_step=1,
                                                                               scenario=base)
    for n in (1, 2, 3):
        sc = presets.verl_fully_async(0.0, gated_on_sync=True, trigger_parameter_sync_step=n, scenario=base)
        assert sc.sync_every == n and sc.pipeline.max_lag_samples == 4 * n
        # "stream off policy" (staleness_threshold = 0, trigger > 1): the k-th update of a window
        # trains samples k - 1 versions old; gated, nothing older
        assert staleness(sc)[: 3 * n] == list(range(n)) * 3
    sc = presets.verl_fully_async(0.5, trigger_parameter_sync_step=4, scenario=base)
    assert (sc.sync_every, sc.pipeline.max_lag_samples) == (4, 24)
    # None keeps the base scenario's cadence (rollsim presets --sync-every N)
    assert presets.verl_fully_async(scenario=base.replace(sync_every=3)).sync_every == 3


def test_the_cadence_adds_half_a_version_per_skipped_sync_in_theory_and_in_simulation():
    import warnings

    from rollsim import OneStepAsync, theory

    assert [theory.sync_cadence_staleness(n) for n in (1, 2, 3, 4)] == [0.0, 0.5, 1.0, 1.5]
    # one slot, exact: synchronous 0, 1, 0, 1 (mean 1/2 over whole cycles); one-step 1, 2, 1, 2 after
    # its first step
    sc = one_slot(0.5, 40.0)
    for n in (2, 3):
        got = staleness(sc.replace(pipeline=Synchronous(), sync_every=n))
        k = len(got) - len(got) % n
        assert sum(got[:k]) / k == theory.sync_cadence_staleness(n)
    # the chapter's scenario, 20 simulated hours: one-step and fully async staleness rise by (N - 1) / 2
    ch = Scenario(horizon_s=20 * 3600.0, seed=1)
    for pipeline in (OneStepAsync(), FullyAsync()):
        base = simulate(ch.replace(pipeline=pipeline), record="summary").summary
        for n in (2, 4):
            got = simulate(ch.replace(pipeline=pipeline, sync_every=n), record="summary").summary
            extra = got["staleness_mean"] - base["staleness_mean"]
            assert extra == pytest.approx(theory.sync_cadence_staleness(n), abs=0.02 * n), (pipeline, n)
            if isinstance(pipeline, OneStepAsync):
                # exactly: step j >= 1 trains the batch generated on version j - 1, which the rollout
                # had only as (j - 1) - ((j - 1) mod N); over a finite run the residues are not all equal
                k = got["steps"]
                assert extra == pytest.approx(sum((j - 1) % n for j in range(1, k)) / k, abs=1e-12)
    # Applied Compute's steady state plus the cadence term, against the simulation (0.787 + 0.5)
    two = ch.replace(sync_every=2)
    assert theory.mean_staleness(two) == pytest.approx(theory.mean_staleness(ch) + 0.5, abs=1e-15)
    assert theory.mean_staleness(two) == pytest.approx(1.287, abs=5e-4)
    assert simulate(two, record="summary").summary["staleness_mean"] == pytest.approx(theory.mean_staleness(two),
                                                                                     abs=0.01)
    # generation outruns training (unbounded queue, 400 s steps, 10 h): the run-length law plus the term
    fast = Scenario(horizon_s=36000.0, train_step_s=400.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rollsim_warning())
        one = simulate(fast, record="summary").summary
        two = simulate(fast.replace(sync_every=2), record="summary").summary
    law = [theory.unbounded_mean_staleness(fast.rollout_slots, fast.batch_size, fast.throughput_ratio(), one["steps"],
                                           sync_every=n) for n in (1, 2)]
    assert law[1] - law[0] == 0.5 and one["steps"] == two["steps"] == 89
    assert two["staleness_mean"] - one["staleness_mean"] == pytest.approx(0.5, abs=0.02)
    assert two["staleness_mean"] == pytest.approx(law[1], rel=0.02)


def rollsim_warning():
    from rollsim import GenerationOutrunsTrainingWarning

    return GenerationOutrunsTrainingWarning
