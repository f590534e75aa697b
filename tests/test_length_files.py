"""Answer-length inputs (``Empirical``, ``LogNormal``, ``Empirical.from_file`` and the CLI / sweep TOML
callers of it) never lose or change a value, and every bad one is refused with a clear message."""

from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import io
import math
import os
import re
import threading

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rollsim import Empirical, FullyAsync, LogNormal, OneStepAsync, Scenario, ScenarioError, datasets, theory
from rollsim.cli import main as cli_main
from rollsim.lengths import MAX_SIGMA, MAX_TOKENS, MAX_WEIGHT_SUM, MIN_TOKENS, MU_BOUND
from rollsim.sweeps import config as sweep_config

RANGE = r"must be a number of tokens in \[2\*\*-40, 2\*\*40\]"


def write(path, text: str | bytes):
    data = text.encode() if isinstance(text, str) else text
    if str(path).lower().endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main(list(args))
        except SystemExit as e:  # argparse
            code = e.code
    return code, out.getvalue(), err.getvalue()


def toml_lengths(tmp_path, table: dict):
    return sweep_config.parse({"base": {"lengths": table}}, root=tmp_path).base.lengths


# ------------------------------------------------------------------ header or no header: no value lost


@pytest.mark.parametrize("name", ["h.csv", "h.csv.gz", "H.CSV", "h.CSV.GZ"])
def test_a_headerless_csv_keeps_its_first_value(tmp_path, name):
    p = write(tmp_path / name, "100\n200\n300\n")
    emp = Empirical.from_file(p)
    assert emp.values.tolist() == [100.0, 200.0, 300.0]
    assert emp.name == name
    assert toml_lengths(tmp_path, {"file": name}).values.tolist() == [100.0, 200.0, 300.0]


def test_a_headerless_csv_through_the_cli_is_the_same_data_as_with_a_header(tmp_path):
    write(tmp_path / "h.csv", "1000\n2000\n3000\n")
    write(tmp_path / "t.csv", "tokens\n1000\n2000\n3000\n")
    write(tmp_path / "lost.csv", "tokens\n2000\n3000\n")  # what the headerless file used to give
    tables = {}
    for name in ("h.csv", "t.csv", "lost.csv"):
        code, out, err = cli("compare", "--lengths", str(tmp_path / name), "--horizon-s", "1800")
        assert code == 0, err
        tables[name] = out.split("\n", 1)[1]  # below the title line, which names the file
    assert tables["h.csv"] == tables["t.csv"] != tables["lost.csv"]


def test_header_detection_and_the_has_header_option(tmp_path):
    num = write(tmp_path / "num.csv", "100,5\n200,3\n")
    head = write(tmp_path / "head.csv", "tokens,n\n100,5\n200,3\n")
    a = Empirical.from_file(num, "column_1", "column_2")
    b = Empirical.from_file(head, "tokens", "n")
    assert a.values.tolist() == b.values.tolist() == [100.0, 200.0]
    assert a.weights.tolist() == b.weights.tolist() == [5.0, 3.0]
    # forced: a numeric first line read as a header (the user says so), a text line read as data
    forced = Empirical.from_file(num, "100", "5", has_header=True)
    assert forced.values.tolist() == [200.0] and forced.weights.tolist() == [3.0]
    with pytest.raises(ScenarioError, match=rf"^lengths\.column: line 1 of '.*head\.csv': {RANGE}, got 'tokens'$"):
        Empirical.from_file(head, "column_1", "column_2", has_header=False)
    assert Empirical.from_file(num, "column_1", "column_2", has_header=False) == a
    # the unknown-column message says how the first line was read
    with pytest.raises(ScenarioError, match=r"its first line is numbers, so it was read as data \(has_header=True"):
        Empirical.from_file(num, "tokens", "n")
    with pytest.raises(ScenarioError, match=r"^lengths\.has_header: must be True, False or None \(detect\), got 1$"):
        Empirical.from_file(num, "column_1", has_header=1)


def test_leading_empty_lines_are_skipped_and_line_numbers_stay_true(tmp_path):
    p = write(tmp_path / "x.csv", "\n\ntokens\n100\n200\n-3\n")
    with pytest.raises(ScenarioError) as e:
        Empirical.from_file(p)
    assert str(e.value) == f"lengths.column: line 6 of {str(p)!r}: must be a number of tokens in [2**-40, 2**40], got -3"
    assert Empirical.from_file(write(tmp_path / "y.csv", "\r\n\r\n100\r\n200\r\n")).values.tolist() == [100.0, 200.0]
    with pytest.raises(ScenarioError, match=rf"^lengths\.column: line 4 of '.*z\.csv': {RANGE}, got 0$"):
        Empirical.from_file(write(tmp_path / "z.csv", "\n100\n200\n0\n"))


@pytest.mark.parametrize("text, column, count, message", [
    ("tokens\n100\n200\n-3\n", None, None, rf"^lengths\.column: line 4 of '.*': {RANGE}, got -3$"),
    ("100\n200\nlong\n", None, None, rf"^lengths\.column: line 3 of '.*': {RANGE}, got 'long'$"),
    ("tokens\n100\n\n200\n", None, None, rf"^lengths\.column: line 3 of '.*': {RANGE}, got an empty cell$"),
    ("tokens\n100\n1e400\n", None, None, rf"^lengths\.column: line 3 of '.*': {RANGE}, got 1e400$"),
    ("tokens\n100\nnan\n", None, None, rf"^lengths\.column: line 3 of '.*': {RANGE}, got nan$"),
    ("tokens\n100\n2000000000000\n", None, None, rf"^lengths\.column: line 3 of '.*': {RANGE}, got 2000000000000$"),
    ("tokens,n\n100,1\n200,-2\n", "tokens", "n",
     r"^lengths\.count_column: line 3 of '.*': must be a count >= 0 \(finite\), got -2$"),
    ("tokens,n\n100,1\n200,\n", "tokens", "n",
     r"^lengths\.count_column: line 3 of '.*': must be a count >= 0 \(finite\), got an empty cell$"),
    ("tokens,n\n100,1\n200,1e30\n", "tokens", "n",
     r"^lengths\.weights: must sum to at most 2\*\*64, got 1e\+30$"),
])
def test_errors_about_values_give_the_line_of_the_file(tmp_path, text, column, count, message):
    for name in ("x.csv", "x.csv.gz"):
        with pytest.raises(ScenarioError, match=message):
            Empirical.from_file(write(tmp_path / name, text), column, count)


def test_numbers_after_ten_thousand_integers_read_whole(tmp_path):
    rows = [str(i + 1) for i in range(10_001)] + ["100.5"]
    p = write(tmp_path / "long.csv", "tokens\n" + "\n".join(rows) + "\n")
    emp = Empirical.from_file(p)
    assert emp.values.size == 10_002 and emp.values[-1] == 100.5 and emp.values[:3].tolist() == [1.0, 2.0, 3.0]
    p2 = write(tmp_path / "hist.csv", "tokens,n\n" + "\n".join(f"{i + 1},1" for i in range(10_001)) + "\n7,2.5\n")
    assert Empirical.from_file(p2, "tokens", "n").weights[-1] == 2.5


def test_spaces_around_numbers_are_ignored(tmp_path):
    emp = Empirical.from_file(write(tmp_path / "s.csv", "tokens, n\n 100 , 2\n200,3\n"), "tokens", " n")
    assert emp.values.tolist() == [100.0, 200.0] and emp.weights.tolist() == [2.0, 3.0]


def test_grouped_files_keep_their_key_order(tmp_path):
    emp = Empirical.from_file(write(tmp_path / "g.csv", "tokens,g\n1,10\n2,9\n3,10\n"), "tokens", group_column="g")
    assert emp.values.tolist() == [2.0, 1.0, 3.0] and emp.groups.tolist() == [9, 10, 10]  # numeric keys: 9 < 10
    with pytest.raises(ScenarioError, match=r"^lengths\.group_column: line 3 of '.*': must be a prompt key, got an "
                                            r"empty cell$"):
        Empirical.from_file(write(tmp_path / "h.csv", "tokens,g\n1,10\n2,\n"), "tokens", group_column="g")


# ------------------------------------------------------------------ types that are not lengths


@pytest.mark.parametrize("text", ["tokens\ntrue\ntrue\n", "tokens\n2024-01-01\n2024-01-02\n",
                                  "tokens\n2024-01-01T10:00:00\n", "tokens\n10:00:00\n"])
def test_csv_cells_that_are_not_numbers_are_refused(tmp_path, text):
    with pytest.raises(ScenarioError, match=rf"^lengths\.column: line 2 of '.*': {RANGE}, got '"):
        Empirical.from_file(write(tmp_path / "b.csv", text))


@pytest.mark.parametrize("series, dtype", [
    (pl.Series("t", [True, True]), "Boolean"),
    (pl.Series("t", [dt.date(2024, 1, 1)]), "Date"),
    (pl.Series("t", [dt.datetime(2024, 1, 1)]), "Datetime"),
    (pl.Series("t", [dt.time(10)]), "Time"),
    (pl.Series("t", [dt.timedelta(seconds=5)]), "Duration"),
])
def test_parquet_columns_that_are_not_numbers_are_refused(tmp_path, series, dtype):
    p = tmp_path / "t.parquet"
    pl.DataFrame([series]).write_parquet(p)
    with pytest.raises(ScenarioError, match=rf"^lengths\.column: column 't' of '.*t\.parquet' must hold numbers, got "
                                            rf"type {dtype}"):
        Empirical.from_file(p)
    q = tmp_path / "h.parquet"
    pl.DataFrame({"tokens": [100.0] * len(series), "n": series}).write_parquet(q)
    with pytest.raises(ScenarioError, match=r"^lengths\.count_column: column 'n' of "):
        Empirical.from_file(q, "tokens", "n")


def test_parquet_nulls_and_numbers_as_text(tmp_path):
    p = tmp_path / "n.parquet"
    pl.DataFrame({"t": [100, None, 300]}).write_parquet(p)
    with pytest.raises(ScenarioError, match=rf"^lengths\.column: row 2 of '.*': {RANGE}, got an empty cell$"):
        Empirical.from_file(p)
    pl.DataFrame({"t": [100, 200, 300], "n": [1.5, 2.0, 0.5]}).write_parquet(p)
    emp = Empirical.from_file(p, "t", "n")
    assert emp.values.tolist() == [100.0, 200.0, 300.0] and emp.weights.tolist() == [1.5, 2.0, 0.5]


@pytest.mark.parametrize("values, message", [
    ([True, True], "lengths.values: must be numbers of tokens, got booleans"),
    ([100, True], "lengths.values: must be numbers; item 1 is True (a bool)"),
    ([100.0, np.True_], "lengths.values: must be numbers; item 1 is np.True_ (a bool)"),
    (np.array(["2024-01-01"], dtype="datetime64[D]"),
     "lengths.values: must be numbers, got datetimes (datetime64[D]): dates and times are not lengths or counts"),
    (np.array([5], dtype="timedelta64[s]"),
     "lengths.values: must be numbers, got durations (timedelta64[s]): dates and times are not lengths or counts"),
    ([dt.datetime(2024, 1, 1)], "lengths.values: must be numbers; item 0 is datetime datetime.datetime(2024, 1, 1, 0, 0)"),
    ([dt.time(10)], "lengths.values: must be numbers; item 0 is time datetime.time(10, 0)"),
    ([100.0, dt.timedelta(1)], "lengths.values: must be numbers; item 1 is timedelta datetime.timedelta(days=1)"),
    (pl.Series([True, False]), "lengths.values: must be numbers, got a polars Series of Boolean"),
    (pl.Series([dt.date(2024, 1, 1)]), "lengths.values: must be numbers, got a polars Series of Date"),
    (pl.Series([dt.datetime(2024, 1, 1)]),
     "lengths.values: must be numbers, got a polars Series of Datetime(time_unit='us', time_zone=None)"),
    (pl.Series([dt.timedelta(1)]), "lengths.values: must be numbers, got a polars Series of Duration(time_unit='us')"),
    (pl.Series([dt.time(1)]), "lengths.values: must be numbers, got a polars Series of Time"),
    (pl.Series([100.0, None]), "lengths.values: must be numbers; item 1 is null"),
    (["100", "200"], "lengths.values: must be numbers, got strings (<U3)"),
    ([100 + 0j], "lengths.values: must be real numbers, got complex numbers (complex128)"),
    (np.ma.array([100.0, 200.0, 300.0], mask=[False, True, False]),
     "lengths.values: is a masked array with 1 masked item(s) (the first is item 1); pass arr.compressed() to drop "
     "them, or arr.filled(value) to replace them"),
])
def test_python_values_that_are_not_numbers_are_refused(values, message):
    with pytest.raises(ScenarioError) as e:
        Empirical(values)
    assert str(e.value) == message


def test_weights_are_checked_like_values():
    with pytest.raises(ScenarioError, match=r"^lengths\.weights: must be numbers, got booleans$"):
        Empirical([100.0, 200.0], [True, False])
    with pytest.raises(ScenarioError, match=r"^lengths\.weights: is a masked array with 1 masked item"):
        Empirical([100.0, 200.0], np.ma.array([1.0, 2.0], mask=[True, False]))
    with pytest.raises(ScenarioError, match=r"^lengths\.weights: must be numbers, got a polars Series of Date$"):
        Empirical([100.0], pl.Series([dt.date(2024, 1, 1)]))
    with pytest.raises(ScenarioError, match=r"^lengths\.groups: is a masked array with masked items"):
        Empirical([100.0, 200.0], groups=np.ma.array([1, 2], mask=[True, False]))


def test_numeric_containers_are_read_unchanged():
    ref = Empirical([100.0, 200.0, 300.0])
    for v in ([100, 200, 300], (100, 200, 300), np.array([100, 200, 300], dtype=np.int16),
              np.array([100, 200, 300], dtype=np.float32), pl.Series([100, 200, 300]),
              pl.Series([100.0, 200.0, 300.0], dtype=pl.Float32), np.ma.array([100.0, 200.0, 300.0]),
              np.ma.array([100.0, 200.0, 300.0], mask=[False, False, False]), [np.int64(100), 200.0, 300]):
        assert Empirical(v) == ref, v
    assert Empirical(np.array([100, 200, 300], dtype=object)) == ref
    from decimal import Decimal
    from fractions import Fraction

    assert Empirical([Decimal("100"), Fraction(200), 300]) == ref


def test_a_duplicated_header_is_refused(tmp_path):
    p = write(tmp_path / "d.csv", "tokens,tokens\n100,200\n")
    with pytest.raises(ScenarioError) as e:
        Empirical.from_file(p, "tokens")
    assert str(e.value) == (f"lengths.path: {str(p)!r} has the column name 'tokens' more than once (columns: "
                            "['tokens', 'tokens']); rename the copies so that each column has one name")
    code, _, err = cli("compare", "--lengths", str(p), "--lengths-column", "tokens", "--horizon-s", "600")
    assert code == 2 and err.strip().splitlines()[-1].startswith("rollsim: error: --lengths: ")


# ------------------------------------------------------------------ files that are not regular files, suffixes


def test_a_directory_is_refused(tmp_path):
    d = tmp_path / "dir.csv"
    d.mkdir()
    with pytest.raises(ScenarioError) as e:
        Empirical.from_file(d)
    assert str(e.value) == f"lengths.path: must be a regular file, got a directory {str(d)!r}"
    code, _, err = cli("compare", "--lengths", str(d), "--horizon-s", "600")
    assert (code, err.strip()) == (2, f"rollsim: error: --lengths: must be a regular file, got a directory {str(d)!r}")
    with pytest.raises(ScenarioError, match=r"^lengths\.path: must be a regular file, got a directory"):
        toml_lengths(tmp_path, {"file": "dir.csv"})


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    f = tmp_path / "pipe.csv"
    os.mkfifo(f)
    outcome: list[BaseException | None] = []

    def read():
        try:
            Empirical.from_file(f)
            outcome.append(None)
        except BaseException as e:  # reported below
            outcome.append(e)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():  # unblock the reader (open for writing), then fail
        with open(f, "w"):
            pass
        t.join(10)
        pytest.fail("Empirical.from_file blocked on a FIFO")
    assert isinstance(outcome[0], ScenarioError)
    assert str(outcome[0]) == f"lengths.path: must be a regular file, got a FIFO (named pipe) {str(f)!r}"
    code, _, err = cli("compare", "--lengths", str(f), "--horizon-s", "600")
    assert code == 2 and "got a FIFO (named pipe)" in err


def test_suffixes_are_case_insensitive_and_unknown_ones_refused(tmp_path):
    p = tmp_path / "a.PARQUET"
    pl.DataFrame({"tokens": [1000.0, 2000.0]}).write_parquet(p)
    assert Empirical.from_file(p).values.tolist() == [1000.0, 2000.0]
    code, _, err = cli("compare", "--lengths", str(p), "--horizon-s", "600")
    assert code == 0, err
    for name in ("a.txt", "a.tsv", "a.gz", "a", "a.csv.bak"):
        q = write(tmp_path / name, "100\n")
        with pytest.raises(ScenarioError) as e:
            Empirical.from_file(q)
        assert str(e.value) == f"lengths.path: must name a .csv, .csv.gz or .parquet file (any case), got {str(q)!r}"
    with pytest.raises(ScenarioError, match=r"^lengths\.has_header: applies to CSV files only"):
        Empirical.from_file(p, has_header=True)


def test_a_missing_file_is_still_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="^lengths file not found: "):
        Empirical.from_file(tmp_path / "none.csv")


# ------------------------------------------------------------------ degenerate numbers


@pytest.mark.parametrize("make, message", [
    (lambda: Empirical([1e308] * 2), "lengths.values: must be in [2**-40, 2**40] tokens; item 0 is 1e+308"),
    (lambda: Empirical([100.0, 2**40 + 1]), "lengths.values: must be in [2**-40, 2**40] tokens; item 1 is "
                                            "1099511627777.0"),
    (lambda: Empirical([2**2000]), "lengths.values: must be in [2**-40, 2**40] tokens; item 0 is an integer of "
                                   "about 603 digits"),
    (lambda: Empirical([100, 10**400]), "lengths.values: must be in [2**-40, 2**40] tokens; item 1 is an integer of "
                                        "about 401 digits"),
    (lambda: Empirical([100.0], max_tokens=2**2000), "lengths.max_tokens: must be in [1, 2**40] tokens, got 2**2000"),
    (lambda: Empirical([100.0], max_tokens=1e13), "lengths.max_tokens: must be in [1, 2**40] tokens, got "
                                                  "10000000000000.0"),
    (lambda: Empirical([1.0, 2.0], [2**2000, 1]), "lengths.weights: must sum to at most 2**64; "
                                                  "item 0 is an integer of about 603 digits"),
    (lambda: Empirical([1.0, 2.0], [2.0**64, 2.0**60]), "lengths.weights: must sum to at most 2**64, got "
                                                        "1.95996655783164e+19"),
    (lambda: Empirical([100.0, 5e-324]), "lengths.values: must be in [2**-40, 2**40] tokens; item 1 is 5e-324"),
    (lambda: Empirical([100.0, 1e-13]), "lengths.values: must be in [2**-40, 2**40] tokens; item 1 is 1e-13"),
    (lambda: LogNormal(mu=10**400), "lengths.mu: must be in [-100, 100] (the log of the median length in tokens), "
                                    "got 10**400"),
    (lambda: LogNormal(mu=-100.5), "lengths.mu: must be in [-100, 100] (the log of the median length in tokens), "
                                   "got -100.5"),
    (lambda: LogNormal(sigma=10.5), "lengths.sigma: must be in [0, 10], got 10.5"),
    (lambda: LogNormal(sigma=2**2000), "lengths.sigma: must be in [0, 10], got 2**2000"),
    (lambda: LogNormal(max_tokens=2**2000), "lengths.max_tokens: must be in [1, 2**40] tokens, got 2**2000"),
    (lambda: LogNormal(max_tokens=1e15), "lengths.max_tokens: must be in [1, 2**40] tokens, got 1000000000000000.0"),
])
def test_degenerate_numbers_are_refused(make, message):
    with pytest.raises(ScenarioError) as e:
        make()
    assert str(e.value) == message


def test_the_extremes_that_are_accepted_give_finite_theory():
    emp = Empirical([MAX_TOKENS] * 2)
    sc = Scenario(lengths=emp)
    assert emp.mean_tokens() == MAX_TOKENS
    assert math.isfinite(theory.expected_rollout_s(sc)) and theory.expected_rollout_s(sc) > 0
    assert theory.expected_max_tokens(emp, 2**24) == MAX_TOKENS
    assert Empirical([1.0, 2.0], [MAX_WEIGHT_SUM, 0.0]).mean_tokens() == 1.0
    tiny = Empirical([MIN_TOKENS] * 3)
    assert theory.expected_rollout_s(Scenario(lengths=tiny, batch_size=2**24, rollout_slots=1)) > 0
    for mu in (-MU_BOUND, MU_BOUND):
        for sigma in (0.0, 5e-324, 1e-300, 1.0, MAX_SIGMA):
            d = LogNormal(mu, sigma, MAX_TOKENS)
            assert 0 <= d.mean_tokens() <= MAX_TOKENS
            assert math.isfinite(theory.expected_rollout_s(Scenario(lengths=d)))


def test_the_engine_refuses_what_python_refuses():
    from rollsim import _rollsim

    d = Scenario(horizon_s=60.0).to_dict()
    for lengths, message in [
        ({"kind": "empirical", "values": np.array([100.0, 1e308]), "weights": None, "group_offsets": None},
         "lengths.values: must be in [2**-40, 2**40] tokens; item 1 is 1e+308"),
        ({"kind": "empirical", "values": np.array([100.0, 200.0]), "weights": np.array([1e300, 1.0]),
          "group_offsets": None}, "lengths.weights: must sum to at most 2**64, got 1e+300"),
        ({"kind": "lognormal", "mu": 7.6, "sigma": 1.0, "max_tokens": 1e15, "group_correlation": 0.0},
         "lengths.max_tokens: must be in [1, 2**40] tokens, got 1000000000000000.0"),
        ({"kind": "lognormal", "mu": -150.0, "sigma": 1.0, "max_tokens": 16384.0, "group_correlation": 0.0},
         "lengths.mu: must be in [-100, 100] (the log of the median length in tokens), got -150.0"),
        ({"kind": "lognormal", "mu": 7.6, "sigma": 11.0, "max_tokens": 16384.0, "group_correlation": 0.0},
         "lengths.sigma: must be in [0, 10], got 11.0"),
    ]:
        with pytest.raises(ScenarioError) as e:
            _rollsim.simulate(dict(d, lengths=lengths), False)
        assert str(e.value) == message
        # the Python API's message for the same input is the same
        with pytest.raises(ScenarioError) as p:
            if lengths["kind"] == "empirical":
                Empirical(lengths["values"], lengths["weights"])
            else:
                LogNormal(lengths["mu"], lengths["sigma"], lengths["max_tokens"])
        assert str(p.value) == message


# any float or integer, biased to the edges of the accepted ranges and beyond them
def numbers(lo: float, hi: float):
    return st.one_of(st.floats(lo, hi), st.floats(), st.sampled_from([lo, hi, 0.0, 5e-324, 1e-300, 1e300, 1e308]),
                     st.integers(-(2**70), 2**70), st.sampled_from([2**2000, 10**400, -(10**400)]))


lognormal_args = st.tuples(numbers(-MU_BOUND, MU_BOUND), numbers(0.0, MAX_SIGMA), numbers(1.0, MAX_TOKENS))
empirical_args = st.tuples(st.lists(numbers(MIN_TOKENS, MAX_TOKENS), min_size=1, max_size=12),
                           st.one_of(st.none(), st.lists(numbers(0.0, MAX_WEIGHT_SUM), min_size=1, max_size=12)),
                           st.one_of(st.none(), numbers(1.0, MAX_TOKENS)))


def build(args):
    """The distribution, or None when it is refused (then with a ScenarioError naming a lengths field)."""
    try:
        if len(args) == 3 and isinstance(args[0], list):
            values, weights, top = args
            if weights is not None:
                weights = (weights * len(values))[: len(values)]
            return Empirical(values, weights, max_tokens=top)
        return LogNormal(*args)
    except ScenarioError as e:
        assert str(e).startswith("lengths."), e
        return None


def in_range(lo: float, hi: float):
    return st.one_of(st.floats(lo, hi), st.sampled_from([lo, hi]))


valid_lognormal_args = st.tuples(in_range(-MU_BOUND, MU_BOUND), in_range(0.0, MAX_SIGMA), in_range(1.0, MAX_TOKENS))
valid_empirical_args = st.tuples(
    st.lists(st.tuples(in_range(MIN_TOKENS, MAX_TOKENS), in_range(0.0, MAX_WEIGHT_SUM / 12)), min_size=1, max_size=12)
    .filter(lambda rows: any(w > 0 for _, w in rows)),
    st.booleans(), st.one_of(st.none(), in_range(1.0, MAX_TOKENS)),
).map(lambda a: ([v for v, _ in a[0]], [w for _, w in a[0]] if a[1] else None, a[2]))
SIZES = (st.integers(1, 2**24), st.integers(1, 512), st.integers(1, 1024), st.floats(1.0, 1000.0))


@given(st.one_of(valid_lognormal_args, valid_empirical_args), *SIZES)
def test_any_accepted_lengths_give_finite_means_and_theory(args, n, slots, batch, speed):
    lengths = build(args)
    assert lengths is not None
    check_finite(lengths, n, slots, batch, speed)


@given(st.one_of(lognormal_args, empirical_args), *SIZES)
def test_any_lengths_are_refused_or_give_finite_means_and_theory(args, n, slots, batch, speed):
    lengths = build(args)
    if lengths is not None:
        check_finite(lengths, n, slots, batch, speed)


def check_finite(lengths, n, slots, batch, speed):
    mean = lengths.mean_tokens()
    assert math.isfinite(mean) and 0 <= mean <= MAX_TOKENS
    top = theory.expected_max_tokens(lengths, n)
    assert math.isfinite(top) and top >= 0
    if mean > 0:
        assert math.isfinite(theory.m_tail(lengths, n))
    sc = Scenario(lengths=lengths, rollout_slots=slots, batch_size=batch, decode_tokens_per_s=speed)
    for value in (theory.expected_rollout_s(sc), theory.sync_step_s(sc), theory.one_step_step_s(sc),
                  theory.fully_async_step_s(sc), theory.step_s(sc, OneStepAsync())):
        assert math.isfinite(value) and value >= 0
    ratio = theory.speedup(sc, FullyAsync())
    assert math.isfinite(ratio) and ratio > 0
    assert math.isfinite(sc.throughput_ratio())


# ------------------------------------------------------------------ built-in data sets


def test_the_shipped_histogram_reads_the_same_through_from_file():
    from importlib import resources

    emp = datasets.deepseek_r1_serving()
    assert emp.values.size == 19_762 and int(emp.weights.sum()) == 1_385_405
    path = resources.files("rollsim.datasets") / "deepseek_r1_serving_output_tokens.csv.gz"
    with resources.as_file(path) as p:
        again = Empirical.from_file(p, "tokens", "count", name="deepseek-r1-serving")
    assert again == emp
    assert datasets.by_name("deepseek-r1", 16384.0).values.max() == 16384.0
    with pytest.raises(ScenarioError, match=re.escape("lengths: unknown data set 'r2' (built in: deepseek-r1, sky-t1)")):
        datasets.by_name("r2")


def test_replace_reaches_every_empirical_field():
    # the private hash was an init field, so replace() (and sweep grids over lengths.*) refused all of them
    sc = Scenario(lengths=Empirical([100.0, 200.0, 300.0]))
    assert sc.replace(**{"lengths.max_tokens": 250.0}).lengths.values.max() == 250.0
    assert sc.replace(**{"lengths.name": "mine"}).lengths.name == "mine"
    assert sc.replace(**{"lengths.values": [5.0, 6.0]}).lengths.values.tolist() == [5.0, 6.0]
    assert sc.replace(**{"lengths.weights": [1.0, 0.0, 1.0]}).lengths.weights.tolist() == [1.0, 0.0, 1.0]
    with pytest.raises(ScenarioError, match=r"^lengths\._hash: unknown field of Empirical"):
        sc.replace(**{"lengths._hash": 1})
