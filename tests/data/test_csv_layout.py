"""CSV files that pandas would quietly repair: short or long rows, a repeated header name."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from vfl.data.csv_layout import check_layout
from vfl.data.table import load_table, read_table
from vfl.errors import DataError

GOOD = "id,a,city,y\n1,0.5,oslo,yes\n2,1.5,rome,no\n3,2.5,oslo,yes\n4,3.5,rome,no\n"


def test_a_short_row_names_its_line_and_the_header(tmp_path: Path) -> None:
    # Prepare: line 4 lost its last two fields
    path = tmp_path / "t.csv"
    path.write_text("id,a,city,y\n1,0.5,oslo,yes\n2,1.5,rome,no\n3,2.5\n4,3.5,rome,no\n")

    # Execute
    with pytest.raises(DataError) as caught:
        read_table(path)

    # Assert
    assert str(caught.value) == (
        f"{path} line 4 has 2 fields but the header has 4 (id, a, city, y); add the missing"
        " fields (leave a field empty between commas for a missing value)"
    )


def test_a_long_row_names_its_line(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "t.csv"
    path.write_text("id,a,city,y\n1,0.5,oslo,yes\n2,1,5,rome,no\n")

    # Execute / Assert
    with pytest.raises(DataError, match=r"line 3 has 5 fields but the header has 4 .*quote a"):
        read_table(path)


def test_a_repeated_header_name_is_refused_instead_of_renamed(tmp_path: Path) -> None:
    # Prepare: pandas alone would read the second 'a' as 'a.1'
    path = tmp_path / "t.csv"
    path.write_text("id,a,b,a,y\n1,2,3,4,yes\n")

    # Execute
    with pytest.raises(DataError) as caught:
        load_table(path, label="y")

    # Assert
    assert str(caught.value) == (
        f"{path}: the header names column 'a' twice (columns 2 and 4); give every column its"
        " own name"
    )


def test_blank_lines_are_skipped_and_rows_keep_their_file_lines(tmp_path: Path) -> None:
    # Prepare: a blank line, a line of spaces, a quoted field across two lines, gzip
    path = tmp_path / "t.csv.gz"
    text = 'id,a,note\n1,2,x\n\n3,4,"two\nlines"\n   \n5,6,z\n'
    path.write_bytes(gzip.compress(text.encode()))

    # Execute
    lines = check_layout(path)
    frame = read_table(path)

    # Assert
    assert lines == [2, 5, 7]
    assert len(frame) == 3 and frame["note"].tolist() == ["x", "two\nlines", "z"]


def test_a_well_formed_table_passes(tmp_path: Path) -> None:
    # Prepare: negative control for the checks above
    path = tmp_path / "t.csv"
    path.write_text(GOOD)

    # Execute
    lines = check_layout(path)

    # Assert
    assert lines == [2, 3, 4, 5]


def test_an_empty_file_says_a_header_is_needed(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "t.csv"
    path.write_text("")

    # Execute / Assert
    with pytest.raises(DataError, match="is empty; a table starts with a header line"):
        read_table(path)
