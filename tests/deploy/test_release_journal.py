"""A party's release journal on disk: counts survive a restart, a torn record is dropped."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pytest

from vfl.deploy.releases import MAGIC, open_journal, table_digest
from vfl.errors import ConfigError
from vfl.privacy.events import PbmEvent

EVENT = PbmEvent(trials=16, beta=0.05, parties=4, dimension=2)
OTHER = PbmEvent(trials=4, beta=0.01, parties=1, dimension=2)
DIGEST = table_digest([b"a", b"b", b"c", b"d", b"e"])
HEADER = len(MAGIC) + 8 + 32
EVENT_RECORD = 1 + 20


def released(path: Path, rows: int, *batches: tuple[list[int], PbmEvent]) -> None:
    journal, _, _ = open_journal(path, rows, DIGEST)
    for batch, event in batches:
        journal.append(np.array(batch, dtype=np.int64), event)
    journal.close()


def test_the_counts_and_settings_of_earlier_releases_are_read_back_after_a_restart(
    tmp_path: Path,
) -> None:
    # Prepare
    path = tmp_path / "releases.bin"
    released(path, 5, ([0, 1, 4], EVENT), ([4, 2], EVENT))
    released(path, 5, ([4], OTHER))  # a second process, after a restart

    # Execute
    _, uses, events = open_journal(path, 5, DIGEST)

    # Assert
    assert uses.tolist() == [1, 1, 1, 0, 3]
    assert events == {EVENT, OTHER}
    releases = (1 + 4 + 12) + (1 + 4 + 8) + (1 + 4 + 4)
    assert path.stat().st_size == HEADER + 2 * EVENT_RECORD + releases


def test_a_setting_is_written_once_until_it_changes_even_across_a_restart(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "releases.bin"

    # Execute
    released(path, 5, ([0], EVENT), ([1], EVENT))
    released(path, 5, ([2], EVENT))

    # Assert
    assert path.stat().st_size == HEADER + EVENT_RECORD + 3 * (1 + 4 + 4)


def test_a_torn_last_record_is_dropped_with_a_warning_and_appends_go_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Prepare: a process killed in the middle of writing its third release
    path = tmp_path / "releases.bin"
    released(path, 4, ([0, 1], EVENT), ([1], EVENT))
    whole = path.stat().st_size
    with path.open("ab") as handle:
        handle.write((b"R" + np.array([3, 2, 3], dtype="<u4").tobytes())[:9])

    # Execute
    with caplog.at_level(logging.WARNING, logger="vfl.deploy.releases"):
        journal, uses, _ = open_journal(path, 4, DIGEST)
    journal.append(np.array([3], dtype=np.int64), EVENT)
    journal.close()

    # Assert
    assert uses.tolist() == [1, 2, 0, 0]
    assert "ends in a torn record (9 bytes)" in caplog.text
    assert open_journal(path, 4, DIGEST)[1].tolist() == [1, 2, 0, 1]
    assert path.stat().st_size == whole + 1 + 4 + 4


def test_a_journal_without_torn_records_is_left_as_it_is(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Prepare: the negative control of the test above
    path = tmp_path / "releases.bin"
    released(path, 4, ([0, 1], EVENT), ([1], EVENT))
    before = path.read_bytes()

    # Execute
    with caplog.at_level(logging.WARNING, logger="vfl.deploy.releases"):
        open_journal(path, 4, DIGEST)[0].close()

    # Assert
    assert path.read_bytes() == before
    assert caplog.text == ""


def test_a_write_that_fails_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    path = tmp_path / "releases.bin"
    released(path, 4, ([0], EVENT))
    before = path.read_bytes()
    journal, _, _ = open_journal(path, 4, DIGEST)

    def broken(descriptor: int) -> None:
        raise OSError("I/O error")

    # Execute
    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError, match="I/O error"):
        journal.append(np.array([1, 2], dtype=np.int64), OTHER)
    monkeypatch.undo()
    journal.append(np.array([3], dtype=np.int64), EVENT)
    journal.close()

    # Assert: the failed release is gone, the next one reads back
    _, uses, events = open_journal(path, 4, DIGEST)
    assert uses.tolist() == [1, 0, 0, 1]
    assert events == {EVENT}
    assert path.read_bytes().startswith(before)


def test_a_file_that_is_not_a_journal_is_refused_naming_it(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "releases.bin"
    path.write_bytes(b"not a journal at all")

    # Execute / Assert
    with pytest.raises(ConfigError) as caught:
        open_journal(path, 4, DIGEST)
    assert str(caught.value) == f"{str(path)!r} is not a vfl release journal (its header is wrong)"
    assert path.read_bytes() == b"not a journal at all"


@pytest.mark.parametrize(
    ("rows", "digest"), [(5, DIGEST), (4, table_digest([b"a", b"b", b"c", b"x"]))]
)
def test_a_journal_of_another_table_is_refused(tmp_path: Path, rows: int, digest: bytes) -> None:
    # Prepare
    path = tmp_path / "releases.bin"
    released(path, 4, ([0], EVENT))

    # Execute / Assert
    with pytest.raises(ConfigError) as caught:
        open_journal(path, rows, digest)
    assert str(caught.value) == (
        f"release journal {str(path)!r} counts another training table (4 rows, IDs"
        f" {DIGEST.hex()[:16]}) than this one ({rows} rows, IDs {digest.hex()[:16]})"
    )


def test_a_journal_that_names_a_row_outside_its_rows_is_refused_as_corrupt(
    tmp_path: Path,
) -> None:
    # Prepare
    path = tmp_path / "releases.bin"
    released(path, 4, ([0], EVENT), ([1], EVENT))
    data = bytearray(path.read_bytes())
    data[-4:] = np.array([7], dtype="<u4").tobytes()
    path.write_bytes(bytes(data))

    # Execute / Assert
    offset = HEADER + EVENT_RECORD + 9
    with pytest.raises(ConfigError, match=f"names row 7 at byte {offset}, outside its 4 rows"):
        open_journal(path, 4, DIGEST)


def test_a_journal_with_an_unknown_record_is_refused_as_corrupt(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "releases.bin"
    released(path, 4, ([0], EVENT))
    with path.open("ab") as handle:
        handle.write(b"Z" * 12)

    # Execute / Assert
    with pytest.raises(ConfigError, match=r"holds an unknown record b'Z' at byte \d+"):
        open_journal(path, 4, DIGEST)


def test_a_journal_for_no_rows_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"a release journal holds 1\.\.4294967295 rows, got 0"):
        open_journal(tmp_path / "releases.bin", 0, DIGEST)
    assert not (tmp_path / "releases.bin").exists()


def test_the_table_digest_separates_ids_that_concatenate_alike() -> None:
    assert table_digest([b"ab", b"c"]) != table_digest([b"a", b"bc"])
