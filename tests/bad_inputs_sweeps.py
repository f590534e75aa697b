"""Bad-input rows of the sweeps (``rollsim.sweep``, the sweep store, sweep TOML files, ``rollsim
sweep``), appended to the table of ``tests/bad_inputs.py`` (the row format is documented there)."""

from __future__ import annotations

EMPTY_OUT = "out: must be a directory path, got an empty string (write '.' for the current directory)"
SWEEP = "rollsim.sweep(Scenario(horizon_s=600.0), seeds=2, progress=False"
TRUNCATE = "[p.write_bytes(p.read_bytes()[:99]) for p in __import__('pathlib').Path(write('o', None)).glob('part-*.parquet')]"

ROWS: list[tuple[str, str, str, str]] = [
    ("sweep", "rollsim.sweep(Scenario(horizon_s=600.0), metrics=['steps', 'steps'], progress=False)", "ScenarioError",
     "re:metrics: \\['steps'\\] given more than once; give each metric once \\(choose from \\['steps', .*\\]\\)"),
    ("sweep", "rollsim.sweep(Scenario(horizon_s=600.0), metrics=[None], progress=False)", "ScenarioError",
     "re:metrics: must be metric names \\(str\\), got None; choose from \\['steps', .*\\]"),
    ("sweep", "rollsim.sweep(Scenario(horizon_s=600.0), ray_address='127.0.0.1:6379', progress=False)", "ScenarioError",
     "ray_address: applies to backend='ray' only, got backend='local'"),
    ("sweep", "rollsim.sweep(Scenario(horizon_s=600.0), backend='ray', ray_address=6379, progress=False)",
     "ScenarioError", "ray_address: must be a string such as '10.0.0.1:6379', got 6379"),
    # ---------------------------------------------------------------- the sweep store (out=DIR)
    ("sweep store", SWEEP + ", out='')", "ScenarioError", EMPTY_OUT),
    ("sweep store", "rollsim.sweeps.read_sweep('')", "ScenarioError", EMPTY_OUT),
    ("sweep store", SWEEP + ", out=3)", "ScenarioError", "out: must be a directory path (str or os.PathLike), got int 3"),
    ("sweep store", f"[{SWEEP}, out=write('o', None)), {TRUNCATE}, rollsim.sweeps.read_sweep(write('o', None))]",
     "ScenarioError",
     "re:out: '.*/o/part-000000000000-000000000002-[0-9a-f]{32}\\.parquet' is damaged: it holds 99 bytes where its "
     "manifest says \\d+ \\(truncated or overwritten\\); run the sweep again with out='.*/o' to move it to _rejected/ "
     "and recompute its runs"),
    ("sweep store", f"[rollsim.sweeps._store.Store(write('o', None)), {SWEEP}, out=write('o', None))]", "ScenarioError",
     "re:out: '.*/o' is being written by another sweep \\(process \\d+ on .* holds '.*/o/_rollsim_sweep\\.lock'\\); "
     "wait for it to finish, or give another out"),
    # ---------------------------------------------------------------- sweep TOML
    ("sweep TOML", "sweep_config.load(toml('seeds = 10000000000'))", "ScenarioError",
     "seeds: a count of seeds must be in [1, 2**32], got 10000000000"),
    ("sweep TOML", "sweep_config.load(toml('seeds = 0'))", "ScenarioError", "seeds: a count of seeds must be in [1, 2**32], got 0"),
    ("sweep TOML", "sweep_config.load(toml('seeds = { start = -1, count = 2 }'))", "ScenarioError",
     "seeds.start: must be an integer in [0, 2**64 - 1], got -1"),
    ("sweep TOML", "sweep_config.load(toml('seeds = { start = 18446744073709551615, count = 2 }'))", "ScenarioError",
     "seeds.count: the last seed, start + count - 1 = 18446744073709551616, must be at most 2**64 - 1 "
     "(start = 18446744073709551615)"),
    ("sweep TOML", "sweep_config.load(toml('metrics = [\"steps\", \"staleness_max\", \"steps\"]'))", "ScenarioError",
     "re:metrics: \\['steps'\\] given more than once; give each metric once \\(choose from \\['steps', .*\\]\\)"),
    ("sweep TOML", "sweep_config.load(toml('metrics = [\"p99\"]'))", "ScenarioError",
     "re:metrics: unknown metric\\(s\\) \\['p99'\\]; choose from \\['steps', .*\\]"),
    # ---------------------------------------------------------------- rollsim sweep
    ("CLI", "cli('sweep', toml('seeds = 1'), '--out', '')", "CliExit", f"exit 2: rollsim: error: --{EMPTY_OUT}"),
    ("CLI", "cli('sweep', toml('seeds = 1'), '--out', write('o', None), '--ray-address', '10.0.0.1:6379')", "CliExit",
     "exit 2: rollsim: error: --ray-address: applies to backend='ray' only, got backend='local'"),
    ("CLI", "cli('sweep', toml('seeds = 10000000000'), '--out', write('o', None))", "CliExit",
     "re:exit 2: rollsim: error: seeds: a count of seeds must be in \\[1, 2\\*\\*32\\], got 10000000000 \\(in the sweep file "
     "'.*/s\\.toml'\\)"),
    ("sweep", "rollsim.sweep(Scenario(horizon_s=60.0), [Scenario(seed=1)], progress=False)", "ScenarioError",
     "scenario: must be None when grid is a list of Scenarios (each is run as it is); put it in the list, or give "
     "grid as a dict of changes to it"),
    ("sweep", "rollsim.sweep(base=Scenario(horizon_s=60.0), progress=False)", "TypeError",
     "re:.*unexpected keyword argument 'base'"),
]
