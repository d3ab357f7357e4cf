"""A party's release journal on disk: counts by sample ID survive restarts and table edits.

Every record carries checksums: an incomplete last record (a kill mid-write) is dropped after a
copy of the file is kept; a record that fails its checksum anywhere refuses the journal, naming
the file and the offset, and leaves it as it is.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import numpy as np
import pytest

from vfl.deploy.journal import JournalDamaged, frame
from vfl.deploy.releases import MAGIC, MAGIC_V3, ReleaseFile, id_keys, open_journal
from vfl.errors import ConfigError
from vfl.privacy.events import PbmEvent

EVENT = PbmEvent(trials=16, beta=0.05, parties=4, dimension=2)
OTHER = PbmEvent(trials=4, beta=0.01, parties=1, dimension=2)
KEYS = id_keys([b"a", b"b", b"c", b"d", b"e"])
FRAMING = 1 + 4 + 4 + 4  # tag, length, head checksum, body checksum
EVENT_RECORD = FRAMING + 20


def release_record(rows: int) -> int:
    return FRAMING + 8 * rows


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
        handle.write(frame(b"R", KEYS[[2, 3]].astype("<u8").tobytes())[:13])
    torn = path.read_bytes()

    # Execute
    with caplog.at_level(logging.WARNING, logger="vfl.deploy.journal"):
        journal, uses, _, _ = open_journal(path, KEYS)
    journal.append(np.array([3], dtype=np.int64), EVENT)
    journal.close()

    # Assert: dropped, with the file as it was kept beside it
    assert uses.tolist() == [1, 2, 0, 0, 0]
    assert "ends in an incomplete record (13 bytes" in caplog.text
    (copy,) = tmp_path.glob("releases.bin.torn-*")
    assert copy.read_bytes() == torn
    assert open_journal(path, KEYS)[1].tolist() == [1, 2, 0, 1, 0]
    assert path.stat().st_size == whole + release_record(1)


@pytest.mark.parametrize("where", ["head", "body"])
def test_a_bit_flipped_in_a_middle_record_refuses_the_journal_and_cuts_nothing(
    tmp_path: Path, where: str
) -> None:
    # Prepare: three releases; one bit of the second flips (in its length, or in a key)
    path = tmp_path / "releases.bin"
    released(path, ([0, 1], EVENT), ([1, 2, 3], EVENT), ([4], EVENT))
    second = len(MAGIC) + EVENT_RECORD + release_record(2)
    data = bytearray(path.read_bytes())
    data[second + (1 if where == "head" else 9 + 8)] ^= 0x04
    path.write_bytes(bytes(data))

    # Execute
    with pytest.raises(JournalDamaged) as caught:
        open_journal(path, KEYS)

    # Assert: the message names the file, the offset and what to do; nothing is cut or copied
    message = str(caught.value)
    assert f"{str(path)!r} is damaged at byte {second}" in message
    assert "never cuts such a file short" in message and "Restore it from a backup" in message
    assert path.read_bytes() == bytes(data)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["releases.bin"]


def test_a_bit_flipped_in_the_last_complete_record_is_damage_too(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "releases.bin"
    released(path, ([0, 1], EVENT), ([4], EVENT))
    data = bytearray(path.read_bytes())
    data[-6] ^= 0x01  # inside the key of the last release

    # Execute / Assert
    path.write_bytes(bytes(data))
    with pytest.raises(JournalDamaged, match="body's checksum does not match"):
        open_journal(path, KEYS)
    assert path.read_bytes() == bytes(data)


def test_a_bit_flipped_in_a_torn_tail_still_opens(tmp_path: Path) -> None:
    # Prepare: the negative control of the test above: the flipped bit is in the incomplete
    # record a kill left, which never left the party
    path = tmp_path / "releases.bin"
    released(path, ([0, 1], EVENT), ([4], EVENT))
    whole = path.read_bytes()
    tail = bytearray(frame(b"R", KEYS[[2, 3]].astype("<u8").tobytes())[:20])
    tail[15] ^= 0x80
    path.write_bytes(whole + bytes(tail))

    # Execute
    _, uses, _, _ = open_journal(path, KEYS)

    # Assert
    assert uses.tolist() == [1, 1, 0, 0, 1]
    assert path.read_bytes() == whole
    assert [p.read_bytes() for p in tmp_path.glob("releases.bin.torn-*")] == [whole + tail]


def test_a_tail_of_zeros_a_power_loss_leaves_is_a_torn_tail(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "releases.bin"
    released(path, ([0], EVENT))
    whole = path.read_bytes()
    path.write_bytes(whole + bytes(40))

    # Execute
    uses = open_journal(path, KEYS)[1]

    # Assert
    assert uses.tolist() == [1, 0, 0, 0, 0]
    assert path.read_bytes() == whole


def test_a_version_3_journal_is_read_and_upgraded_after_a_copy_is_kept(tmp_path: Path) -> None:
    # Prepare: version 3 (no checksums): a setting, a release of rows 0 and 2, an exact run of
    # row 1, and a torn release
    path = tmp_path / "releases.bin"
    setting = b"E" + np.array([16], "<u4").tobytes() + np.array([0.05], "<f8").tobytes()
    setting += np.array([4, 2], "<u4").tobytes()
    release = b"R" + np.array([2], "<u4").tobytes() + KEYS[[0, 2]].astype("<u8").tobytes()
    exact = b"X" + np.array([1], "<u4").tobytes() + KEYS[[1]].astype("<u8").tobytes()
    old = MAGIC_V3 + setting + release + exact + release[:7]
    path.write_bytes(old)

    # Execute
    journal, uses, exact_runs, events = open_journal(path, KEYS)
    journal.append(np.array([4], dtype=np.int64), EVENT)
    journal.close()

    # Assert: the same counts; the old file kept whole; version 4 from now on
    assert uses.tolist() == [1, 0, 1, 0, 0] and exact_runs.tolist() == [0, 1, 0, 0, 0]
    assert events == {EVENT}
    assert [p.read_bytes() for p in tmp_path.glob("releases.bin.v3-*")] == [old]
    assert path.read_bytes().startswith(MAGIC)
    assert open_journal(path, KEYS)[1].tolist() == [1, 0, 1, 0, 1]


def test_a_journal_without_torn_records_is_left_as_it_is(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Prepare: the negative control of the test above
    path = tmp_path / "releases.bin"
    released(path, ([0, 1], EVENT), ([1], EVENT))
    before = path.read_bytes()

    # Execute
    with caplog.at_level(logging.WARNING, logger="vfl.deploy.journal"):
        open_journal(path, KEYS)[0].close()

    # Assert
    assert path.read_bytes() == before
    assert caplog.text == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["releases.bin"]


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


def test_a_journal_with_an_unknown_record_is_refused_as_damaged(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "releases.bin"
    released(path, ([0], EVENT))
    with path.open("ab") as handle:
        handle.write(frame(b"Z", bytes(12)))

    # Execute / Assert
    offset = len(MAGIC) + EVENT_RECORD + release_record(1)
    with pytest.raises(ConfigError, match=f"holds an unknown record b'Z' at byte {offset}"):
        open_journal(path, KEYS)


def test_a_journal_with_an_invalid_setting_is_refused_as_damaged(tmp_path: Path) -> None:
    # Prepare: a setting of trials = 0, with valid checksums
    path = tmp_path / "releases.bin"
    setting = np.array([0], "<u4").tobytes() + np.array([0.05], "<f8").tobytes()
    path.write_bytes(MAGIC + frame(b"E", setting + np.array([4, 2], "<u4").tobytes()))

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
