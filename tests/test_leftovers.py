"""Defects left by earlier work: the colocated split row's utilisation, the deployment's
training-state and trajectory-bound warnings, slime's Megatron layout, whatif's training GPUs,
the pipeline string error, the step plot's label and verl's validation time."""
from __future__ import annotations

import pytest

from rollsim.cli import main


def test_split_colocated_row_says_what_its_utilisation_counts(capsys):
    """The colocated row's rollout util is slot occupancy: a synchronous batch of 64 requests fills
    at most 64 of the 4 x 256 slots (1.1 %, printed as 0 % before), while the GPUs generate 95 % of
    the time (the trainer's idle share): the row says both."""
    assert main(["split", "--gpus", "4", "--gpu-s-per-token", "0.0004", "--horizon-s", "1800",
                 "--slots-per-instance", "256", "--batch-size", "64", "--colocated-switch-s", "10"]) == 0
    row = [line for line in capsys.readouterr().out.splitlines() if "(colocated" in line]
    assert len(row) == 1
    cells = row[0].split()
    assert cells[:6] == ["4", "4", "1024", "562.3", "95%", "1.1%"]
    assert ("(colocated, synchronous: every GPU takes turns; rollout util 1.1% is slot occupancy: the batch's 64 "
            "requests fill at most 64 of 1024 slots; the GPUs generate while the trainer idles, 95% of the time)"
            in row[0])
