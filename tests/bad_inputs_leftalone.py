"""Bad inputs of a user's parquet file (``lengths.path``, ``metrics``, ``result_dir``): a truncated or
corrupted file is refused, naming the file and what is wrong, before polars reads it (polars 2.1.0
panics on some such files and aborts the process on others: a page header's negative value count
makes it allocate about 2^61 bytes). Appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

_T = "parquet({'tokens': [float(i) for i in range(1000)]})"
# the first data page's header holds its value count (1000, zigzag varint d0 0f) as the first field of
# its data_page_header struct (field 5, type struct: 0x2c); 0xff 0x0f makes it -1024
_NEG = f"{_T}.replace(b'\\x2c\\x15\\xd0\\x0f', b'\\x2c\\x15\\xff\\x0f', 1)"
_M = "parquet({'step': list(range(1, 201)), 'gen_s': [1.5] * 200})"
_MID = f"(lambda b: b[:4] + b[len(b) // 2:])({_M})"  # bytes cut out of the middle: the footer intact
_NOT = "is not a whole parquet file"

ROWS: list[tuple[str, str, str, str]] = [
    ("parquet file", f"Empirical.from_file(write('a.parquet', {_NEG}))", "ScenarioError",
     f"re:lengths\\.path: '.*/a\\.parquet' {_NOT}: row group 0, column 'tokens' has a data page at byte 4 that says "
     "-1024 values \\(at least 0\\)"),
    ("parquet file", f"rollsim.calibration.read_metrics(write('m.parquet', {_MID}))", "ScenarioError",
     f"re:metrics: 'm\\.parquet' {_NOT}: row group 0, column 'step' says its data is bytes 4 to \\d+, outside the "
     "column data \\(bytes 4 to \\d+\\): the file is truncated or overwritten"),
    ("parquet file", f"rollsim.calibration.read_metrics(write('m.parquet', {_M}[:300]))", "ScenarioError",
     f"re:metrics: 'm\\.parquet' {_NOT}: it does not end with the magic bytes PAR1 \\(ends with b'.*'; a truncated "
     "or partly written file\\)"),
    ("parquet file", "rollsim.calibration.read_metrics(write('m.parquet', 'step,gen_s\\n1,2.5\\n'))", "ScenarioError",
     "metrics: 'm.parquet' is not a parquet file: it does not start with the magic bytes PAR1 (starts with b'step')"),
    ("parquet file", "rollsim.calibration.read_metrics(write('m.parquet', b''))", "ScenarioError",
     "metrics: 'm.parquet' is not a parquet file: 0 bytes, fewer than the format's 12 (the magic PAR1 at both ends "
     "and the footer length)"),
    ("parquet file", f"rollsim.calibration.read_metrics(write('m.parquet', {_M}[:-8] + b'\\xff\\xff\\xff\\x00PAR1'))",
     "ScenarioError",
     f"re:metrics: 'm\\.parquet' {_NOT}: its footer length 16777215 does not fit its \\d+ bytes \\(a truncated or "
     "corrupted file\\)"),
    ("parquet file", f"rollsim.report.load(write('sweep.parquet', {_NEG}))", "ScenarioError",
     f"re:result_dir: '.*/sweep\\.parquet' {_NOT}: row group 0, column 'tokens' has a data page at byte 4 that says "
     "-1024 values \\(at least 0\\)"),
]

_V = ("'train/timing_s/gen,train/timing_s/update_actor,train/response_length/mean,timing_s/gen\\n"
      "10,5,100,10\\n11,5,110,11\\n12,5,120,12\\n'")
_W = ("'train/timing_s/gen,train/timing_s/update_actor,train/response_length/mean\\n"
      "10,5,100\\n11,5,110\\n12,5,120\\n'")
ROWS += [
    # a wandb export with its train/ section: read without the prefix, unless the plain name is a column too
    ("metrics", f"rollsim.calibration.normalize(rollsim.calibration.read_metrics(write('m.csv', {_V})))",
     "ScenarioError",
     "metrics: the columns 'train/timing_s/gen' and 'timing_s/gen' are both metric timing_s/gen (one with a logger's "
     "train/ prefix): cannot tell which to read; drop one of them"),
    ("metrics", f"rollsim.calibration.normalize(rollsim.calibration.read_metrics(write('m.csv', {_W})))",
     "ScenarioError",
     "metrics: missing response_length/max (verl metric names; generic column 'response_max': longest answer of the "
     "step, tokens); columns given: train/timing_s/gen, train/timing_s/update_actor, train/response_length/mean"),
]
