"""A few cells that are not numbers in a column of numbers: an exact error, or missing if asked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.data.numbers import MOSTLY_NUMBERS, bad_numbers_of, clean_numbers
from vfl.data.table import load_table, read_table
from vfl.data.tabular import encode_table
from vfl.deploy.config import PartyDataConfig
from vfl.deploy.data import load_party_tables
from vfl.errors import DataError

ROWS = 200


def customers(rows: int = ROWS) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {
            "id": [f"c{i:04d}" for i in range(rows)],
            "income": rng.normal(50.0, 10.0, rows).round(3),
            "city": rng.choice(["paris", "oslo", "rome"], rows),
            "churn": np.where(np.arange(rows) % 4 == 0, "yes", "no"),
        }
    )


def write_dirty(path: Path, row: int = 17, value: str = "twelve") -> Path:
    frame = customers().astype({"income": object})
    frame.loc[row, "income"] = value
    frame.to_csv(path, index=False)
    return path


def test_one_word_in_a_numeric_column_stops_with_file_column_line_and_value(
    tmp_path: Path,
) -> None:
    # Prepare
    path = write_dirty(tmp_path / "customers.csv")

    # Execute
    with pytest.raises(DataError) as caught:
        load_table(path, label="churn", id_column="id")

    # Assert
    assert str(caught.value) == (
        f"{path}: column 'income' holds numbers except in 1 of its 200 filled cells; line 19"
        " (row 17) holds 'twelve'. Fix them, or set bad_numbers = \"missing\" in [data] to read"
        " them as missing values"
    )


def test_with_bad_numbers_missing_the_columns_are_the_clean_tables_plus_a_missing_flag(
    tmp_path: Path,
) -> None:
    # Prepare: the same table clean and with one word in 'income'
    clean_path = tmp_path / "clean.csv"
    customers().to_csv(clean_path, index=False)
    dirty_path = write_dirty(tmp_path / "dirty.csv")

    # Execute
    clean = load_table(clean_path, label="churn", id_column="id")
    dirty = load_table(dirty_path, label="churn", id_column="id", bad_numbers="missing")
    unchecked = pd.read_csv(dirty_path).drop(columns="id")  # what pandas alone makes of it
    hazard = encode_table(unchecked, unchecked, label="churn")

    # Assert
    assert clean.columns == ("income", "city=oslo", "city=paris", "city=rome")
    assert dirty.columns == ("income", "income=missing", "city=oslo", "city=paris", "city=rome")
    row = int(np.flatnonzero(np.concatenate([dirty.train.ids, dirty.test.ids]) == "c0017")[0])
    flags = np.concatenate([dirty.train.features, dirty.test.features])[:, 1]
    assert flags[row] == 1.0 and flags.sum() == 1.0
    assert len(hazard.columns) > ROWS  # negative control: unchecked, one word makes 200+ columns


def test_a_column_of_text_with_some_numbers_stays_categorical(tmp_path: Path) -> None:
    # Prepare: 'plan' is a code in 90 % of rows and a word in 10 %: text, not bad numbers
    frame = customers()
    frame["plan"] = np.where(np.arange(ROWS) % 10 == 0, "other", (np.arange(ROWS) % 3).astype(str))
    frame.to_csv(tmp_path / "t.csv", index=False)

    # Execute
    dataset = load_table(tmp_path / "t.csv", label="churn", id_column="id")

    # Assert
    assert [c for c in dataset.columns or () if c.startswith("plan")] == [
        "plan=0",
        "plan=1",
        "plan=2",
        "plan=other",
    ]


def test_ids_and_declared_categorical_columns_are_never_checked(tmp_path: Path) -> None:
    # Prepare: one word among numeric ids; 5 % words among the numeric codes of column 'zone'
    frame = customers()
    frame["id"] = [str(i) for i in range(ROWS - 1)] + ["x-last"]
    frame["zone"] = ["unknown"] * 10 + [str(i % 4) for i in range(ROWS - 10)]
    frame.to_csv(tmp_path / "t.csv", index=False)

    # Execute
    dataset = load_table(
        tmp_path / "t.csv", label="churn", id_column="id", categorical=["city", "zone"]
    )
    with pytest.raises(DataError) as undeclared:  # negative control: 'zone' not declared
        load_table(tmp_path / "t.csv", label="churn", id_column="id")

    # Assert
    assert "zone=unknown" in (dataset.columns or ())
    assert "x-last" in set(dataset.train.ids) | set(dataset.test.ids)
    assert "column 'zone' holds numbers except in 10 of its 200 filled cells" in str(
        undeclared.value
    )


def test_a_parquet_file_names_the_row(tmp_path: Path) -> None:
    # Prepare
    frame = customers().astype({"income": str})
    frame.loc[5, "income"] = "n.a."
    frame.to_parquet(tmp_path / "t.parquet", index=False)

    # Execute / Assert
    with pytest.raises(DataError, match=r"t\.parquet: column 'income' .* row 5 holds 'n\.a\.'\."):
        read_table(tmp_path / "t.parquet")


def test_a_deployed_partys_table_is_checked_and_can_opt_in(tmp_path: Path) -> None:
    # Prepare
    train = write_dirty(tmp_path / "train.csv", row=3, value="?!")
    customers().to_csv(tmp_path / "test.csv", index=False)
    config = PartyDataConfig(
        train=str(train), test=str(tmp_path / "test.csv"), id_column="id", columns=("income",)
    )

    # Execute
    with pytest.raises(DataError) as caught:
        load_party_tables(config)
    tables = load_party_tables(PartyDataConfig(**{**config.__dict__, "bad_numbers": "missing"}))

    # Assert
    assert str(caught.value).startswith(f"{train}: column 'income' holds numbers except in 1 of")
    assert "line 5 (row 3) holds '?!'" in str(caught.value)
    income = tables[0].frame["income"]
    assert income.dtype == np.float64 and income.isna().sum() == 1 and np.isnan(income[3])


@settings(max_examples=60, deadline=None)
@given(
    numbers=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=80),
    words=st.integers(0, 10),
)
def test_a_column_is_numeric_exactly_when_95_percent_of_its_filled_cells_are_numbers(
    numbers: list[float], words: int
) -> None:
    # Prepare
    cells = pd.Series([*map(str, numbers), *["word"] * words, None], dtype=object)

    # Execute
    values, bad = bad_numbers_of(cells)

    # Assert
    numeric = len(numbers) / (len(numbers) + words) >= MOSTLY_NUMBERS
    assert int(bad.sum()) == (words if numeric else 0)
    np.testing.assert_array_equal(values[: len(numbers)], np.asarray(numbers, dtype=np.float64))
    assert np.isnan(values[len(numbers) :]).all()


def test_an_unknown_policy_is_refused() -> None:
    # Execute / Assert
    with pytest.raises(DataError, match=r"bad_numbers must be one of \['error', 'missing'\]"):
        clean_numbers(customers(), "t.csv", bad_numbers="drop")  # type: ignore[arg-type]
