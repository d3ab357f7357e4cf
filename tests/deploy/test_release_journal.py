"""A party's release journal on disk: counts survive a restart, a torn record is dropped."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from vfl.deploy.releases import MAGIC, open_journal
from vfl.errors import ConfigError


def released(journal_path: Path, rows: int, *batches: list[int]) -> None:
    journal, _ = open_journal(journal_path, rows)
    for batch in batches:
        journal.append(np.array(batch, dtype=np.int64))
    journal.close()


def test_the_counts_of_earlier_releases_are_read_back_after_a_restart(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "releases-a1.bin"
    released(path, 5, [0, 1, 4], [4, 2])
    released(path, 5, [4])  # a second process, after a restart

    # Execute
    _, uses = open_journal(path, 5)

    # Assert
    assert uses.tolist() == [1, 1, 1, 0, 3]
    assert path.stat().st_size == len(MAGIC) + 8 + (4 + 12) + (4 + 8) + (4 + 4)


def test_a_torn_last_record_is_dropped_with_a_warning_and_appends_go_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Prepare: a process killed in the middle of writing its third release
    path = tmp_path / "releases-a1.bin"
    released(path, 4, [0, 1], [1])
    whole = path.stat().st_size
    with path.open("ab") as handle:
        handle.write(np.array([3, 2, 3], dtype="<u4").tobytes()[:9])

    # Execute
    with caplog.at_level(logging.WARNING, logger="vfl.deploy.releases"):
        journal, uses = open_journal(path, 4)
    journal.append(np.array([3], dtype=np.int64))
    journal.close()

    # Assert
    assert uses.tolist() == [1, 2, 0, 0]
    assert "ends in a torn record (9 bytes)" in caplog.text
    assert open_journal(path, 4)[1].tolist() == [1, 2, 0, 1]
    assert path.stat().st_size == whole + 8


def test_a_journal_without_torn_records_is_left_as_it_is(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Prepare: the negative control of the test above
    path = tmp_path / "releases-a1.bin"
    released(path, 4, [0, 1], [1])
    before = path.read_bytes()

    # Execute
    with caplog.at_level(logging.WARNING, logger="vfl.deploy.releases"):
        open_journal(path, 4)[0].close()

    # Assert
    assert path.read_bytes() == before
    assert caplog.text == ""


def test_a_file_that_is_not_a_journal_is_refused_naming_it(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "releases-a1.bin"
    path.write_bytes(b"not a journal at all")

    # Execute / Assert
    with pytest.raises(ConfigError) as caught:
        open_journal(path, 4)
    assert str(caught.value) == f"{str(path)!r} is not a vfl release journal (its header is wrong)"
    assert path.read_bytes() == b"not a journal at all"


def test_a_journal_of_another_number_of_rows_is_refused(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "releases-a1.bin"
    released(path, 4, [0])

    # Execute / Assert
    with pytest.raises(ConfigError) as caught:
        open_journal(path, 5)
    assert str(caught.value) == (
        f"release journal {str(path)!r} counts 4 training rows, but this alignment has 5; keep"
        " the journal with the state directory it was written in"
    )


def test_a_journal_that_names_a_row_outside_its_rows_is_refused_as_corrupt(
    tmp_path: Path,
) -> None:
    # Prepare
    path = tmp_path / "releases-a1.bin"
    released(path, 4, [0], [1])
    data = bytearray(path.read_bytes())
    data[-4:] = np.array([7], dtype="<u4").tobytes()
    path.write_bytes(bytes(data))

    # Execute / Assert
    with pytest.raises(ConfigError, match=r"names row 7 at byte 32, outside its 4 rows"):
        open_journal(path, 4)


def test_a_journal_for_no_rows_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"a release journal holds 1\.\.4294967295 rows, got 0"):
        open_journal(tmp_path / "releases-a1.bin", 0)
    assert not (tmp_path / "releases-a1.bin").exists()
