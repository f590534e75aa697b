"""The README's Python examples run, and its printed tables are what the CLI prints."""

import os
import re

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
    printed = capsys.readouterr().out.splitlines()[1:]
    assert "\n".join(printed) + "\n" == blocks("text")[0]
