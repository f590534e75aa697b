"""The whatif frame names each row's weight-sync cadence (``sync_every``), and the table's note on a
row that cannot train takes the cadence from that column (not parsed back out of its own reason)."""

from __future__ import annotations

import warnings

import polars as pl
import pytest

from rollsim import configs
from rollsim.calibration import calibrate
from rollsim.configs.cli import _whatif_row_notes
from rollsim.what_if import whatif

EX = configs.EXAMPLES


@pytest.fixture(scope="module")
def calibrated():
    return calibrate(EX / "verl_fully_async_metrics.csv", configs.load(EX / "verl_fully_async.sh"), bootstrap=0)


def test_whatif_frame_has_each_rows_sync_every(calibrated):
    assert calibrated.scenario.sync_every == 8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = whatif(calibrated, [{"max_staleness": 0}, {"pipeline": "verl-fully-async", "trigger_parameter_sync_step": 2},
                                 {"pipeline": "sync"}], draws=0, steps=8)
    assert df["variant"].to_list()[1] == "max_staleness=0"
    assert df["sync_every"].to_list() == [8, 8, 2, 8]
    assert df["cannot_train"][1] is not None and df["cannot_train"][2] is None


def test_row_note_takes_the_cadence_from_the_column(calibrated):
    # a reason whose wording names no "(sync_every = N)": the cadence still comes from the row
    df = pl.DataFrame({"variant": ["baseline", "max_staleness=0"], "cannot_train": [None, "cap below the floor"],
                       "sync_every": [8, 3]})
    note = _whatif_row_notes(calibrated, df)
    assert list(note) == [1]
    assert note[1].startswith("not simulated: --max-staleness below sync_every - 1 = 2 cannot train: ")
    assert note[1].endswith("The smallest --max-staleness that trains is 2 (the config's sync cadence: sync_every = 3 "
                            "from its async_training.trigger_parameter_sync_step)")
