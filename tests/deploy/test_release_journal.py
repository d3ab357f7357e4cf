"""A party's release journal on disk: counts by sample ID survive restarts and table edits."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import numpy as np
import pytest

from vfl.deploy.releases import MAGIC, ReleaseFile, id_keys, open_journal
from vfl.errors import ConfigError
from vfl.privacy.events import PbmEvent

EVENT = PbmEvent(trials=16, beta=0.05, parties=4, dimension=2)
OTHER = PbmEvent(trials=4, beta=0.01, parties=1, dimension=2)
KEYS = id_keys([b"a", b"b", b"c", b"d", b"e"])
EVENT_RECORD = 1 + 20


def release_record(rows: int) -> int:
    return 1 + 4 + 8 * rows


def released(path: Path, *batches: tuple[list[int], PbmEvent], keys: np.ndarray = KEYS) -> None:
    journal, _, _, _ = open_journal(path, keys)
    for batch, event in batches:
        journal.append(np.array(batch, dtype=np.int64), event)
    journal.close()


def reopened_after_one_release(tmp_path: Path) -> tuple[Path, bytes, ReleaseFile]:
    """A journal that holds one release, its bytes, and it opened again for appending."""
    path = tmp_path / "releases.bin"
    released(path, ([0], EVENT))
    return path, path.read_bytes(), open_journal(path, KEYS)[0]


def test_the_counts_and_settings_of_earlier_releases_are_read_back_after_a_restart(
    tmp_path: Path,
) -> None:
    # Prepare
    path = tmp_path / "releases.bin"
    released(path, ([0, 1, 4], EVENT), ([4, 2], EVENT))
    released(path, ([4], OTHER))  # a second process, after a restart

    # Execute
    _, uses, exact, events = open_journal(path, KEYS)

    # Assert
    assert uses.tolist() == [1, 1, 1, 0, 3]
    assert exact.tolist() == [0] * 5
    assert events == {EVENT, OTHER}
    records = 2 * EVENT_RECORD + release_record(3) + release_record(2) + release_record(1)
    assert path.stat().st_size == len(MAGIC) + records


def test_counts_follow_the_sample_ids_when_the_table_changes(tmp_path: Path) -> None:
    # Prepare: released from a table a, b, c, d, e
    path = tmp_path / "releases.bin"
    released(path, ([0, 1], EVENT), ([1, 4], EVENT))

    # Execute: the table now holds e, x, b (a moved out, x is new)
    _, uses, _, events = open_journal(path, id_keys([b"e", b"x", b"b"]))

    # Assert
    assert uses.tolist() == [1, 0, 2]
    assert events == {EVENT}
    # Assert: a comes back and still counts once
    assert open_journal(path, id_keys([b"a"]))[1].tolist() == [1]


def test_a_run_without_pbm_is_counted_per_row(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "releases.bin"
    journal, _, _, _ = open_journal(path, KEYS)

    # Execute
    journal.append_exact(np.array([1, 3], dtype=np.int64))
    journal.close()

    # Assert
    _, uses, exact, events = open_journal(path, KEYS)
    assert exact.tolist() == [0, 1, 0, 1, 0]
    assert uses.tolist() == [0] * 5 and events == set()


def test_a_setting_is_written_once_until_it_changes_even_across_a_restart(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "releases.bin"

    # Execute
    released(path, ([0], EVENT), ([1], EVENT))
    released(path, ([2], EVENT))

    # Assert
    assert path.stat().st_size == len(MAGIC) + EVENT_RECORD + 3 * release_record(1)


def test_a_torn_last_record_is_dropped_with_a_warning_and_appends_go_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Prepare: a process killed in the middle of writing its third release
    path = tmp_path / "releases.bin"
    released(path, ([0, 1], EVENT), ([1], EVENT))
    whole = path.stat().st_size
    with path.open("ab") as handle:
        handle.write((b"R" + np.array([2], dtype="<u4").tobytes() + bytes(16))[:13])

    # Execute
    with caplog.at_level(logging.WARNING, logger="vfl.deploy.releases"):
        journal, uses, _, _ = open_journal(path, KEYS)
    journal.append(np.array([3], dtype=np.int64), EVENT)
    journal.close()

    # Assert
    assert uses.tolist() == [1, 2, 0, 0, 0]
    assert "ends in a torn record (13 bytes)" in caplog.text
    assert open_journal(path, KEYS)[1].tolist() == [1, 2, 0, 1, 0]
    assert path.stat().st_size == whole + release_record(1)


def test_a_journal_without_torn_records_is_left_as_it_is(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Prepare: the negative control of the test above
    path = tmp_path / "releases.bin"
    released(path, ([0, 1], EVENT), ([1], EVENT))
    before = path.read_bytes()

    # Execute
    with caplog.at_level(logging.WARNING, logger="vfl.deploy.releases"):
        open_journal(path, KEYS)[0].close()

    # Assert
    assert path.read_bytes() == before
    assert caplog.text == ""


def test_a_write_that_fails_is_taken_back_and_the_journal_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    path, before, journal = reopened_after_one_release(tmp_path)
    real_write = os.write

    def half_then_fail(descriptor: int, data: bytes) -> int:
        real_write(descriptor, bytes(data)[:5])  # part of the record reaches the file
        raise OSError("I/O error")

    # Execute
    monkeypatch.setattr(os, "write", half_then_fail)
    with pytest.raises(OSError, match="I/O error"):
        journal.append(np.array([1, 2], dtype=np.int64), OTHER)
    monkeypatch.undo()

    # Assert: the failed release is gone, the next one reads back
    assert path.read_bytes() == before
    journal.append(np.array([3], dtype=np.int64), EVENT)
    journal.close()
    _, uses, _, events = open_journal(path, KEYS)
    assert uses.tolist() == [1, 0, 0, 1, 0]
    assert events == {EVENT}


def test_a_journal_that_cannot_sync_its_undo_refuses_every_later_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    path, before, journal = reopened_after_one_release(tmp_path)

    def broken(descriptor: int) -> None:
        raise OSError("I/O error")

    # Execute
    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError, match="I/O error"):
        journal.append(np.array([1], dtype=np.int64), EVENT)
    monkeypatch.undo()

    # Assert
    with pytest.raises(OSError, match="cannot be written any more"):
        journal.append(np.array([2], dtype=np.int64), EVENT)
    journal.close()
    assert path.read_bytes() == before
    assert open_journal(path, KEYS)[1].tolist() == [1, 0, 0, 0, 0]


def test_a_file_that_is_not_a_journal_is_refused_naming_it(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "releases.bin"
    path.write_bytes(b"not a journal at all")

    # Execute / Assert
    with pytest.raises(ConfigError) as caught:
        open_journal(path, KEYS)
    assert str(caught.value) == f"{str(path)!r} is not a vfl release journal (its header is wrong)"
    assert path.read_bytes() == b"not a journal at all"


def test_a_journal_with_an_unknown_record_is_refused_as_corrupt(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "releases.bin"
    released(path, ([0], EVENT))
    with path.open("ab") as handle:
        handle.write(b"Z" * 12)

    # Execute / Assert
    offset = len(MAGIC) + EVENT_RECORD + release_record(1)
    with pytest.raises(ConfigError, match=f"holds an unknown record b'Z' at byte {offset}"):
        open_journal(path, KEYS)


def test_a_journal_with_an_invalid_setting_is_refused_as_corrupt(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "releases.bin"
    released(path, ([0], EVENT))
    data = bytearray(path.read_bytes())
    data[len(MAGIC) + 1 : len(MAGIC) + 5] = bytes(4)  # trials = 0
    path.write_bytes(bytes(data))

    # Execute / Assert
    with pytest.raises(ConfigError, match=f"holds an invalid setting at byte {len(MAGIC)}"):
        open_journal(path, KEYS)


def test_id_keys_are_the_first_eight_bytes_of_sha256_little_endian() -> None:
    # Prepare
    expected = [int.from_bytes(hashlib.sha256(v).digest()[:8], "little") for v in (b"a", b"ab")]

    # Execute
    keys = id_keys([b"a", b"ab"])

    # Assert
    assert keys.dtype == np.uint64
    assert keys.tolist() == expected
