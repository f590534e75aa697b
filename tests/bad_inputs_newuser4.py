"""Bad inputs found playing a user who brings a framework run (an OpenRLHF launch script of the releases
before its dotted arguments, metrics tables with a step logged twice, JSON of another layout, a
';'-separated CSV, no known metric name) and an agentic user (a flag's None spelled none); appended to
the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

LOAD = "rollsim.configs.load"
VERL = f"{LOAD}(write('v.yaml', 'data: {{train_batch_size: 4, max_response_length: 1024}}\\n'))"
H = "step,gen_s,train_s,response_mean,response_max"
OLD_ORLHF = ("python3 -m openrlhf.cli.train_ppo_ray --actor_num_nodes 1 --vllm_num_engines 4 --rollout_batch_size 64 "
             "--n_samples_per_prompt 8 --generate_max_len 1024\\n")
_RENAME = ("an option name of OpenRLHF releases before its dotted arguments; rollsim reads train_ppo_ray's dotted names "
           "(OpenRLHF/OpenRLHF 3c3be62, openrlhf/cli/train_ppo_ray.py), and would take the defaults for these: rename ")
_UNITS = " (their units are the same: --rollout.batch_size counts prompts, --train.batch_size samples)"
_SHAPE = ('a .json metrics file must hold a list of per-step objects ([{"timing_s/gen": 104.1, ...}, ...]) or an object '
          'of columns ({"timing_s/gen": [104.1, ...], ...})')


def cal(path: str, base: str = VERL) -> str:
    return f"rollsim.calibrate({path}, {base}, bootstrap=0)"


ROWS: list[tuple[str, str, str, str]] = [
    # OpenRLHF's flat names (up to v0.8): read as unknown options they left every default in place, exit 0
    ("config", f"{LOAD}(write('o.sh', '{OLD_ORLHF}'))", "ScenarioError",
     f"--actor_num_nodes: {_RENAME}--actor_num_nodes -> --actor.num_nodes, --vllm_num_engines -> --vllm.num_engines, "
     f"--rollout_batch_size -> --rollout.batch_size, --n_samples_per_prompt -> --rollout.n_samples_per_prompt, "
     f"--generate_max_len -> --rollout.max_new_tokens{_UNITS}"),
    ("config CLI", "cli('import', write('o.sh', 'python3 -m openrlhf.cli.train_ppo_ray --train.async_enable "
                   "--rollout.batch_size 64 --async_queue_size 2\\n'))", "CliExit",
     f"exit 2: rollsim: error: --async_queue_size: {_RENAME}--async_queue_size -> --train.async_queue_size{_UNITS}"),
    # a step logged twice (a resumed run's re-logged steps) was fitted twice, without a word
    ("metrics", cal(f"write('m.csv', '{H}\\n0,10,5,100,400\\n1,12,6,120,500\\n1,12,6,120,500\\n2,11,5.5,110,450\\n')"),
     "ScenarioError", "metrics: step 1 appears in 2 rows: one row per logged step (a resumed run logs its steps again "
                      "from the last checkpoint: keep one row of each step)"),
    ("metrics", cal(f"write('m.csv', '{H}\\n0,10,5,100,400\\n0,12,6,120,500\\n3,1,1,1,1\\n3,11,5.5,110,450\\n"
                    "4,11,5.5,110,450\\n4,11,5.5,110,450\\n')"),
     "ScenarioError", "metrics: step 0 appears in 2 rows (3, 4 more than once too): one row per logged step (a resumed "
                      "run logs its steps again from the last checkpoint: keep one row of each step)"),
    # JSON of another layout: a one-row table of lists, read as such, gave "must be numbers, got List(Float64)"
    ("metrics", cal("write('m.json', '{\"rows\": [{\"gen_s\": 1}, {\"gen_s\": 2}]}')"), "ScenarioError",
     f"metrics: m.json: {_SHAPE}, got an object whose 'rows' holds objects or lists (if they are the per-step rows, "
     "write that list alone to the file)"),
    ("metrics", cal("write('m.json', '{\"gen_s\": [1, 2, 3], \"train_s\": [1, 2]}')"), "ScenarioError",
     f"metrics: m.json: the columns have different lengths ([2, 3]); {_SHAPE}"),
    ("metrics", cal("write('m.json', '[1, 2, 3]')"), "ScenarioError", f"metrics: m.json: {_SHAPE}, got a list of int"),
    ("metrics", cal("write('m.json', '{\"gen_s\": 1, \"train_s\": 2}')"), "ScenarioError",
     f"metrics: m.json: {_SHAPE}, got an object whose values are ['int']"),
    ("metrics", cal("write('m.json', '{\"gen_s\": [1, 2,')"), "ScenarioError",
     "re:metrics: cannot read m\\.json: Expecting value: line 1 column \\d+ \\(char \\d+\\)"),
    # a ';'-separated file read as one column named by the whole header
    ("metrics", cal(f"write('m.csv', '{H.replace(',', ';')}\\n0;10;5;100;400\\n')"), "ScenarioError",
     "metrics: m.csv has one column, 'step;gen_s;train_s;response_mean;response_max': its values look separated by "
     "';'; a .csv file must be comma-separated"),
    # no column of any framework's names: the generic ones were looked for, which the message did not say
    ("metrics", cal("write('m.csv', 'eval/timing_s/gen,eval/timing_s/update_actor\\n1,2\\n')"), "ScenarioError",
     "metrics: missing gen_s (generic metric names; generic column 'gen_s': generation of the batch, seconds); no "
     "column has a framework's metric names (verl timing_s/gen, AReaL timeperf/rollout, slime perf/rollout_time, "
     "OpenRLHF timing/generation), so the generic names were looked for; columns given: eval/timing_s/gen, "
     "eval/timing_s/update_actor"),
    # a longest answer over the config's limit: named by its metric, its step and the config's option
    ("metrics", cal(f"write('m.csv', '{H}\\n0,10,5,100,400\\n1,12,6,120,2000\\n2,11,5.5,110,450\\n')"), "ScenarioError",
     "metrics: response_max 2000 tokens at step 1 exceeds the config's length limit 1024 tokens "
     "(data.max_response_length): the metrics are of another run, or the config's limit is not the run's"),
    ("metrics", cal("write('m.csv', 'timing_s/gen,timing_s/update_actor,response_length/mean,response_length/max\\n"
                    "10,5,100,400\\n12,6,120,2000\\n11,5.5,110,450\\n')", "rollsim.Scenario(lengths=rollsim.LogNormal("
                    "6.0, 1.0, 1024.0))"), "ScenarioError",
     "metrics: response_length/max 2000 tokens at row 1 (counting from 0) exceeds the scenario's length limit 1024 tokens "
     "(lengths.max_tokens): the metrics are of another run, or the config's limit is not the run's"),
    # a value that is not a number ("N/A" in a CSV made the column text): named with its row
    ("metrics", cal(f"write('m.csv', '{H}\\n0,10,5,100,400\\n1,N/A,6,120,500\\n2,11,5.5,110,450\\n')"),
     "ScenarioError", "metrics: column 'gen_s' must be numbers, got 'N/A' in row 1 (counting from 0; 1 such row): leave "
                      "a value not logged empty"),
    # whatif --max-staleness with no fully asynchronous --pipeline: the grid left the caps out, silently
    ("config CLI", "cli('whatif', '--config', os.path.join(ROOT, 'python/rollsim/examples/configs/verl_grpo.yaml'), "
                   "'--metrics', os.path.join(ROOT, 'python/rollsim/examples/configs/verl_grpo_metrics.csv'), "
                   "'--pipeline', 'sync,one-step', '--max-staleness', '2', '--bootstrap', '0')", "CliExit",
     "exit 2: rollsim: error: --max-staleness: applies to the fully asynchronous pipelines only (--pipeline fully-async "
     "or verl-fully-async), got --pipeline sync,one-step"),
    # a flag that may be None takes none on the command line, and its error says so
    ("CLI", "cli('run', '--agentic-preset', 'default', '--env-slots', '0')", "CliExit",
     "exit 2: rollsim: error: --env-slots: must be in [1, 16777216], or none (unbounded), got 0"),
    # a distribution is a scenario file's table: the flag's error says so, not the Python constructors
    ("CLI", "cli('run', '--agentic-preset', 'swe-agent', '--tool-latency-s', '-3')", "CliExit",
     "exit 2: rollsim: error: --tool-latency-s: must be in [0, 1e9] seconds, or a distribution (a table of a scenario "
     "file: kind = \"lognormal\" or \"empirical\"), got -3.0"),
    ("CLI", "cli('run', '--kv-cache-tokens', '-5')", "CliExit",
     "exit 2: rollsim: error: --kv-cache-tokens: must be in [1, 1e15] tokens, or none (unlimited), got -5.0"),
]
