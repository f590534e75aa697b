"""A KV preemption when the time cannot resolve the moment the KV fills (runs reaching ~1e10 s on a
4096-slot instance whose throughput table gives 1e-6 tokens/s at two sequences): the preempted
request waits for the next finish instead of being readmitted and preempted again at the same time
forever (the run used to hang, uncounted by ``events`` and deaf to Ctrl-C)."""

from rollsim import LogNormal, OffPolicy, Scenario, simulate


def test_a_preempted_request_is_not_readmitted_at_the_same_time():
    table = ((1, 30.0), (2, 1e-6), (4096, 1e9))
    got = []
    for group in (70, 772):
        sc = Scenario(rollout_slots=4096, slots_per_instance=4096, batch_size=group, group_size=group,
                      pipeline=OffPolicy(1), decode_throughput_table=table, decode_tokens_per_s=30.0,
                      kv_cache_tokens=4097.0, lengths=LogNormal(7.0, 1.0, 4096.0), train_step_s=60.0, horizon_s=60.0)
        s = simulate(sc, record="summary", max_samples=3000).summary
        got.append((s["events"], s["preemptions"], s["samples_finished"], s["steps"], s["end_s"]))
    assert got == [(71, 274, 70, 1, 8789333539.903774), (773, 6716, 772, 1, 182941039461.08914)]
