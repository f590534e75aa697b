"""Bad verl fully async cadences of a what-if variant (``rollsim.whatif``'s ``trigger_parameter_sync_step``,
``require_batches``, ``ppo_mini_batch_size``, ``staleness_threshold``, ``partial_rollout``,
``concurrent_samples_per_replica``; ``pipeline='verl-fully-async'`` or an imported verl fully_async
config; ``--trigger-parameter-sync-step`` / ``--require-batches`` / ``--staleness-threshold`` on the command
line) and the exact error each gets; appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

LOAD = "rollsim.configs.load"
METRICS = ("write('m.csv', 'gen_s,train_s,response_mean,response_max\\n10,5,100,400\\n12,6,120,500\\n"
           "11,5.5,110,450\\n')")
VERL = "write('v.yaml', 'data: {train_batch_size: 4, max_response_length: 1024}\\n')"
FA = ("write('fa.sh', 'python -m verl.experimental.fully_async_policy.fully_async_main "
      "actor_rollout_ref.actor.ppo_mini_batch_size=2\\n')")
CAL = f"rollsim.calibrate({METRICS}, {LOAD}({VERL}), bootstrap=0)"


def whatif(variant: str) -> str:
    return f"rollsim.whatif({CAL}, [{variant}], draws=0, steps=4)"


CLI = f"cli('whatif', '--config', {VERL}, '--metrics', {METRICS}, '--bootstrap', '0', '--draws', '0'"

ROWS: list[tuple[str, str, str, str]] = [
    ("verl cadence", whatif("{'pipeline': 'fully-async', 'trigger_parameter_sync_step': 2}"), "ScenarioError",
     "trigger_parameter_sync_step: applies to verl's fully async pipeline only: pipeline 'verl-fully-async', an "
     "imported verl fully_async config as pipeline, or a baseline imported from one (got pipeline 'fully-async')"),
    ("verl cadence", whatif("{'require_batches': 2}"), "ScenarioError",
     "require_batches: applies to verl's fully async pipeline only: pipeline 'verl-fully-async', an imported verl "
     "fully_async config as pipeline, or a baseline imported from one (got a Synchronous baseline)"),
    ("verl cadence", whatif("{'pipeline': 'verl-fully-async', 'trigger_parameter_sync_step': 3}"), "ScenarioError",
     "trigger_parameter_sync_step: trigger_parameter_sync_step x require_batches must divide the 4 prompts per step "
     "into local updates of whole mini-batches, got 3 x 1"),
    ("verl cadence", whatif("{'pipeline': 'verl-fully-async', 'require_batches': 3}"), "ScenarioError",
     "require_batches: trigger_parameter_sync_step x require_batches must divide the 4 prompts per step into local "
     "updates of whole mini-batches, got 4 x 3"),
    ("verl cadence", whatif("{'pipeline': 'verl-fully-async', 'ppo_mini_batch_size': 3}"), "ScenarioError",
     "ppo_mini_batch_size: require_batches x ppo_mini_batch_size must divide the 4 prompts per step (verl's docs: "
     "trigger_parameter_sync_step = train_batch_size / (require_batches x ppo_mini_batch_size)), got 1 x 3; or give "
     "trigger_parameter_sync_step"),
    ("verl cadence", whatif("{'pipeline': 'verl-fully-async', 'trigger_parameter_sync_step': 0}"), "ScenarioError",
     "trigger_parameter_sync_step: must be in [1, 16777216], got 0"),
    ("verl cadence", whatif("{'pipeline': 'verl-fully-async', 'trigger_parameter_sync_step': 2.0}"), "ScenarioError",
     "trigger_parameter_sync_step: must be an integer in [1, 16777216], got float 2.0"),
    ("verl cadence", whatif("{'pipeline': 'verl-fully-async', 'staleness_threshold': -0.1}"), "ScenarioError",
     "staleness_threshold: must be in [0, 1e6], got -0.1"),
    ("verl cadence", whatif("{'pipeline': 'verl-fully-async', 'partial_rollout': 'yes'}"), "ScenarioError",
     "partial_rollout: must be True or False, got 'yes'"),
    ("verl cadence", whatif("{'pipeline': 'verl-fully-async', 'concurrent_samples_per_replica': 0}"), "ScenarioError",
     "concurrent_samples_per_replica: must be in [1, 16777216], got 0"),
    ("verl cadence", whatif("{'pipeline': 'verl-fully-async', 'prompts': 0}"), "ScenarioError",
     "prompts: must be a positive integer, got 0"),
    ("verl cadence", whatif("{'pipeline': 'verl-fully-async', 'group_size': 'four'}"), "ScenarioError",
     "group_size: must be a positive integer, got 'four'"),
    ("verl cadence", whatif(f"{{'pipeline': {LOAD}({VERL})}}"), "ScenarioError",
     "pipeline: an imported config as a variant's pipeline must be verl's fully_async recipe (its cadence), got a verl "
     "config whose pipeline is Synchronous"),
    ("verl cadence", whatif(f"{{'pipeline': {LOAD}({FA}), 'prompts': 8}}"), "ScenarioError",
     "prompts: a verl fully async variant trains require_batches x ppo_mini_batch_size prompts per local update and "
     "trigger_parameter_sync_step of them per sync: set those instead"),
    ("verl cadence", f"{CLI}, '--pipeline', 'fully-async', '--trigger-parameter-sync-step', '2')", "CliExit",
     "exit 2: rollsim: error: --trigger-parameter-sync-step: is verl's fully async cadence: it needs --pipeline "
     "verl-fully-async (or a verl fully_async config without --pipeline)"),
    ("verl cadence", f"{CLI}, '--staleness-threshold', '0.5')", "CliExit",
     "exit 2: rollsim: error: --staleness-threshold: is verl's fully async cadence: it needs --pipeline "
     "verl-fully-async (or a verl fully_async config without --pipeline)"),
    ("verl cadence", f"{CLI}, '--pipeline', 'verl-fully-async', '--staleness-threshold', '-1')", "CliExit",
     "exit 2: rollsim whatif: error: argument --staleness-threshold: must be numbers in [0, 1e6) separated by "
     "commas, got '-1'"),
    ("verl cadence", f"{CLI}, '--pipeline', 'verl-fully-async', '--require-batches', '0')", "CliExit",
     "exit 2: rollsim whatif: error: argument --require-batches: must be positive integers separated by commas, "
     "got '0'"),
]
