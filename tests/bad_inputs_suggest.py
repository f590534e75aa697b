"""Bad inputs whose unknown key is a near miss of an allowed one: the weight-sync cluster tables and the
learning rules of summary mode say "did you mean ...?" as the scenario's TOML tables do; appended to the
table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    ("sync cluster", "cluster_from_dict({'model': {'preset': 'qwen3-4b'}, 'infer': {'tpp': 2}})", "ScenarioError",
     "infer.tpp: unknown key; did you mean tp? (allowed: preset, instances, tp, ep)"),
    ("sync cluster", "cluster_from_dict({'model': {'preset': 'qwen3-4b'}, 'infr': {'tp': 2}})", "ScenarioError",
     "infr: unknown key; did you mean infer? (allowed: fanout, hardware, infer, model, software, stack, topology, "
     "train)"),
    ("sync cluster", "cluster_from_dict({'model': {'prest': 'qwen3-4b'}})", "ScenarioError",
     "model.prest: unknown key; did you mean preset? (allowed: infer_precision, layers, params, preset, tensors, "
     "train_precision)"),
    ("learning sweeps", 'rollsim.learning.summary_learning(pl.DataFrame({"steps": [1]}), tis_capp=3.0)',
     "ScenarioError",
     "tis_capp: unknown rule; did you mean tis_cap? (summary mode takes ['clip_low', 'clip_high', 'tis_cap', "
     "'icepop', 'seed'])"),
]
