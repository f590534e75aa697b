"""Bad AReaL configs a new user hit: a YAML null for an option whose AReaL field is not Optional
(AReaL's OmegaConf merge refuses it; before, it was read as the default silently), and the exact
error each gets; appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

LOAD = "rollsim.configs.load"
_WHY = ("(not Optional; areal/api/cli_args.py, inclusionAI/AReaL 4aef98d8d818af55b43621aaadba047ae10f4e77) and "
        "OmegaConf's merge raises ValidationError \"Incompatible value 'None'\"; give a number, or leave the line "
        "out for AReaL's default")


def _areal(section: str, key: str) -> str:
    return (f"{LOAD}(write('a.yaml', 'gconfig: {{n_samples: 4}}\\ntrain_dataset: {{batch_size: 8}}\\n"
            f"{section}: {{{key}: null}}\\n'), 'areal')")


ROWS: list[tuple[str, str, str, str]] = [
    ("config", _areal("rollout", "max_head_offpolicyness"), "ScenarioError",
     "rollout.max_head_offpolicyness: is null, which AReaL refuses: its field is "
     f"InferenceEngineConfig.max_head_offpolicyness: int = 0 {_WHY}"),
    ("config", _areal("rollout", "consumer_batch_size"), "ScenarioError",
     "rollout.consumer_batch_size: is null, which AReaL refuses: its field is "
     f"InferenceEngineConfig.consumer_batch_size: int = 1 {_WHY}"),
    ("config", _areal("cluster", "n_nodes"), "ScenarioError",
     f"cluster.n_nodes: is null, which AReaL refuses: its field is ClusterSpecConfig.n_nodes: int = 32 {_WHY}"),
]
