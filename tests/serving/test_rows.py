"""A party's current table: looked up by ID, encoded by its bundle, read again when it changes."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch

from vfl.data.encoding import CategoricalColumn, NumericColumn, TableEncoder
from vfl.deploy.rows import TableRows

ENCODER = TableEncoder(
    (NumericColumn("income", 50.0, 10.0, False), CategoricalColumn("region", ("east", "north")))
)
TABLE = pd.DataFrame(
    {"id": ["a", "b", "c"], "income": [60.0, 40.0, 50.0], "region": ["east", "north", "east"]}
)


def write(path: Path, frame: pd.DataFrame) -> None:
    staged = path.with_name(path.name + ".new")
    frame.to_csv(staged, index=False)
    os.replace(staged, path)


def test_rows_are_encoded_in_request_order_and_unknown_ids_fail(tmp_path: Path) -> None:
    # Prepare
    write(tmp_path / "t.csv", TABLE)
    rows = TableRows(1, tmp_path / "t.csv", id_column="id", encoder=ENCODER)

    # Execute
    looked = rows.lookup(["c", "zz", "a"])

    # Assert
    expected = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    torch.testing.assert_close(looked.block, expected)
    assert looked.failed == {1: "party 1 holds no row with this ID"}


def test_a_changed_file_is_read_again(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "t.csv"
    write(path, TABLE)
    rows = TableRows(1, path, id_column="id", encoder=ENCODER)
    before = rows.lookup(["d"])

    # Execute
    write(
        path, pd.concat([TABLE, pd.DataFrame({"id": ["d"], "income": [70.0], "region": ["north"]})])
    )
    after = rows.lookup(["d"])

    # Assert: unknown before (negative control), found after
    assert before.failed and not after.failed
    torch.testing.assert_close(after.block, torch.tensor([[2.0, 0.0, 1.0]]))


def test_sqlite_rows_are_looked_up_at_every_request(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "rows.db"
    with sqlite3.connect(path) as connection:
        TABLE.to_sql("features", connection, index=False)
    rows = TableRows(2, path, id_column="id", encoder=ENCODER)

    # Execute
    looked = rows.lookup(["b", "nope"])

    # Assert
    torch.testing.assert_close(looked.block[0], torch.tensor([-1.0, 0.0, 1.0]))
    assert looked.failed == {1: "party 2 holds no row with this ID"}


@pytest.mark.parametrize(
    ("change", "position", "reason"),
    [
        ({"income": ["x", 40.0, 50.0]}, 0, "numeric column 'income' holds a value that is not a"),
        ({"region": ["west", "north", "east"]}, None, "column 'region' holds a category unseen"),
    ],
)
def test_bad_cells_fail_their_id_and_unseen_categories_are_noted(
    tmp_path: Path, change: dict[str, Any], position: int | None, reason: str
) -> None:
    # Prepare
    write(tmp_path / "t.csv", TABLE.assign(**change))
    rows = TableRows(1, tmp_path / "t.csv", id_column="id", encoder=ENCODER)

    # Execute
    looked = rows.lookup(["a", "b"])

    # Assert
    if position is None:
        assert not looked.failed and reason in looked.notes[0] and 1 not in looked.notes
        torch.testing.assert_close(looked.block[0], torch.tensor([1.0, 0.0, 0.0]))
    else:
        assert reason in looked.failed[position] and 1 not in looked.failed


def test_a_missing_column_fails_every_id_naming_it(tmp_path: Path) -> None:
    # Prepare
    write(tmp_path / "t.csv", TABLE.drop(columns=["region"]))
    rows = TableRows(3, tmp_path / "t.csv", id_column="id", encoder=ENCODER)

    # Execute
    looked = rows.lookup(["a", "b"])

    # Assert
    assert set(looked.failed) == {0, 1}
    assert "party 3's table t.csv has no column(s) ['region']" in looked.failed[0]
