"""The README's Python examples run, and its printed tables are what the CLI prints."""

import os
import re
import warnings

import rollsim
from rollsim.cli import main

README = os.path.join(os.path.dirname(__file__), "..", "README.md")


def blocks(lang):
    with open(README, encoding="utf-8") as f:
        text = f.read()
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_python_examples_run():
    code = blocks("python")
    assert code
    for block in code:
        exec(compile(block, "README.md", "exec"), {})


def test_compare_table_in_readme_is_current(capsys):
    main(["compare"])
    # the Quick start shows what `rollsim compare` prints, its first line (the scenario) included
    printed = capsys.readouterr().out
    assert printed.startswith("rollsim compare: 256 slots x 30 tokens/s, batch 512, 60 s/step, 2 h, ")
    assert printed == blocks("text")[0]


# The README's other printed tables, each with the command the text beside it names (the split
# table's block starts with its own "$ rollsim split ..." line). Blocks are found by their header
# line and command so that a table moved in the README is still checked against its own command.
PRINTED = [
    (["presets", "--lengths", "deepseek-r1", "--max-tokens", "16384", "--horizon-s", "14400"], "rollsim presets: "),
    (["presets", "--lengths", "deepseek-r1", "--max-tokens", "16384", "--horizon-s", "14400",
      "--train-step-s", "150"], "rollsim presets: "),
    (["split", "--gpus", "16", "--gpu-s-per-token", "0.004", "--train-fixed-s", "5", "--slots-per-instance",
      "16", "--max-staleness", "2", "--horizon-s", "10800"], "$ rollsim split"),
    (["compare", "--lengths", "deepseek-r1", "--max-tokens", "16384"], "compared over the same "),
]


def test_every_printed_table_in_readme_is_current(capsys):
    tables = [b for b in blocks("text")
              if b.startswith(("rollsim compare: ", "rollsim presets: ", "$ rollsim split", "compared over the same "))]
    # the chapter's compare table (checked above), two presets tables, the split, the R1 compare
    assert len(tables) == 5
    for (argv, head), block in zip(PRINTED, tables[1:]):
        assert block.startswith(head)
        # the 150 s presets table: the chapter's uncapped pipeline outruns training, as the text says
        warns = "150" in argv
        with warnings.catch_warnings():
            if warns:
                warnings.simplefilter("always", rollsim.GenerationOutrunsTrainingWarning)
            main(argv)
        out, err = capsys.readouterr()
        # the warning names the system that warned: the chapter's uncapped pipeline, not the presets
        assert ("rollsim: warning: generation outruns training in 1 of 7 systems (fully async (chapter))" in err) == warns, err
        assert err.count("rollsim: warning:") == warns, err
        if argv[0] == "compare":   # its first line names the scenario; the README shows the table
            out = out.split("\n", 1)[1]
        if head.startswith("$"):   # the block's first line is the command itself
            assert block.split("\n", 1)[0] == "$ rollsim " + " ".join(argv)
            block = block.split("\n", 1)[1]
        assert out == block, argv
