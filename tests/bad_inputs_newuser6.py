"""Bad inputs a new user meets in the first hour (a length file's column name mistyped, on the command
line and in Python) and the exact error each gets; appended to the table of ``tests/bad_inputs.py``
(see its format)."""

from __future__ import annotations

_CSV = "'step,response_length\\n1,12\\n2,300\\n'"

ROWS: list[tuple[str, str, str, str]] = [
    # a near miss of a column name is named (the header was read right: no advice about it)
    ("length file", f"Empirical.from_file(write('two.csv', {_CSV}), 'response_lenght')", "ScenarioError",
     "re:lengths\\.column: no column 'response_lenght' in '.*/two\\.csv' \\(columns: \\['step', 'response_length'\\]\\); "
     "did you mean 'response_length'\\?"),
    ("length file", f"Empirical.from_file(write('two.csv', {_CSV}), 'response_length', count_column='stpe')",
     "ScenarioError",
     "re:lengths\\.count_column: no column 'stpe' in '.*/two\\.csv' \\(columns: \\['step', 'response_length'\\]\\); "
     "did you mean 'step'\\?"),
    ("CLI", f"cli('compare', '--lengths', write('two.csv', {_CSV}), '--lengths-column', 'response_lenght')", "CliExit",
     "re:exit 2: rollsim: error: --lengths-column: no column 'response_lenght' in '.*/two\\.csv' \\(columns: "
     "\\['step', 'response_length'\\]\\); did you mean 'response_length'\\?"),
]
