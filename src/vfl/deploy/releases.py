"""A party's release journal on disk: each release of training rows, written before it leaves.

``vfl.privacy.releases.ReleaseGuard`` counts and limits a party's releases; this file keeps the
counts across restarts, alignments, runs and edits of the party's table. It records each
released row by a key of its sample ID (the first 8 bytes of SHA-256 of the ID), so a row
added, dropped or moved in the table keeps its count. One file, ``releases.bin``, in the
party's ``privacy.journal_dir`` (default: its state directory): the header
``"vfl-releases/v4" LF`` (16 bytes), then checksummed records (``vfl.deploy.journal``) whose
bodies are (little-endian)::

    "E"  u32 trials, f64 beta, u32 parties, u32 dimension: the PBM setting of what follows
    "R"  n u64 ID keys: one release through PBM
    "X"  n u64 ID keys: rows a run without PBM trained on (their embeddings left exact, so
         their epsilon is infinite)

Each record is written and synced before what it records leaves the party, so a process killed
mid-write leaves an incomplete last record of something that never left: it is dropped, after a
copy of the file is kept, when the file is opened again. A record that fails its checksum
anywhere is damage: the party refuses to start, naming the file and the offset, and the file is
left as it is (a lost record would under-count the party's epsilon). A journal of version 3
(no checksums) is read and rewritten as version 4, after a copy of it is kept. A write that
fails in a running process is undone, or the journal refuses every later write.
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import numpy.typing as npt

from vfl.deploy.journal import (
    Record,
    damaged,
    drop_torn_tail,
    frame,
    keep_copy,
    records,
    replace_whole,
)
from vfl.errors import ConfigError
from vfl.privacy.events import PbmEvent
from vfl.privacy.releases import Rows

log = logging.getLogger(__name__)

MAGIC = b"vfl-releases/v4\n"
MAGIC_V3 = b"vfl-releases/v3\n"
FILE_NAME = "releases.bin"
_EVENT = struct.Struct("<IdII")
_COUNT = struct.Struct("<I")
_EVENT_TAG, _RELEASE_TAG, _EXACT_TAG = b"E", b"R", b"X"
_KEY_SIZE = 8

Keys = npt.NDArray[np.uint64]


def id_keys(ids: Iterable[bytes]) -> Keys:
    """The journal's key of each sample ID: the first 8 bytes of its SHA-256, little-endian."""
    return np.array(
        [int.from_bytes(hashlib.sha256(value).digest()[:8], "little") for value in ids],
        dtype=np.uint64,
    )


class ReleaseFile:
    """Appends records to a journal file (``open_journal`` reads it back first).

    Args:
        path: The file.
        keys: The key of each row of the party's training table.
        event: The setting the file's last release was written under.
    """

    def __init__(self, path: Path, keys: Keys, event: PbmEvent | None) -> None:
        self.path = path
        self._keys = keys
        self._event = event
        self._fd: int | None = os.open(path, os.O_WRONLY)
        self._end = os.lseek(self._fd, 0, os.SEEK_END)
        self._broken = False

    def append(self, rows: Rows, event: PbmEvent) -> None:
        """Write one release of table ``rows`` under ``event`` and sync it to disk.

        Raises:
            OSError: if it cannot be written (the file is then as before the call).
        """
        record = b""
        if event != self._event:
            setting = _EVENT.pack(event.trials, event.beta, event.parties, event.dimension)
            record = frame(_EVENT_TAG, setting)
        self._write(record + self._rows_record(_RELEASE_TAG, rows))
        self._event = event

    def append_exact(self, rows: Rows) -> None:
        """Record that table ``rows`` are trained on without PBM (before the run starts)."""
        self._write(self._rows_record(_EXACT_TAG, rows))

    def close(self) -> None:
        """Close the file."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _rows_record(self, tag: bytes, rows: Rows) -> bytes:
        return frame(tag, self._keys[rows].astype("<u8").tobytes())

    def _write(self, record: bytes) -> None:
        if self._fd is None or self._broken:
            raise OSError(f"release journal {str(self.path)!r} cannot be written any more")
        try:
            os.lseek(self._fd, self._end, os.SEEK_SET)
            view = memoryview(record)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)
        except OSError:
            try:  # a record that may be partly on disk is taken back
                os.ftruncate(self._fd, self._end)
                os.fsync(self._fd)
            except OSError:
                self._broken = True  # nothing more is written after an unknown tail
            raise
        self._end += len(record)


def open_journal(path: Path, keys: Keys) -> tuple[ReleaseFile, Rows, Rows, set[PbmEvent]]:
    """The journal at ``path`` and, for the table rows with these ID ``keys``, what it holds.

    Returns the journal, each row's number of releases through PBM, each row's number of runs
    without PBM, and every PBM setting a release was made under. Keys of IDs no longer in the
    table stay in the file (they count again if the ID comes back). Creates the file if it is
    missing (``read_journal`` says what else opening does).

    Raises:
        ConfigError: naming the file, if it is not a release journal or is damaged.
    """
    uses = np.zeros(len(keys), dtype=np.int64)
    exact = np.zeros(len(keys), dtype=np.int64)
    events: set[PbmEvent] = set()
    last: PbmEvent | None = None
    rows_of = _RowsOf(keys)
    for record in read_journal(path):
        if record.tag == _EVENT_TAG:
            last = _event(path, record)
            continue
        found = rows_of(_keys_of(path, record))
        if record.tag == _EXACT_TAG:
            np.add.at(exact, found, 1)
        elif last is None:
            raise ConfigError(f"release journal {str(path)!r}: a release before any setting")
        else:
            np.add.at(uses, found, 1)
            events.add(last)
    return ReleaseFile(path, keys, last), uses, exact, events


def read_journal(path: Path) -> list[Record]:
    """Every complete record of the journal at ``path``, after making it whole.

    A missing journal is created empty; one of version 3 is rewritten as version 4 after a copy
    is kept (``releases.bin.v3-<UTC time>``); an incomplete last record is dropped after a copy
    is kept (``releases.bin.torn-<UTC time>``). Nothing else changes the file.

    Raises:
        ConfigError: naming the file and the byte offset, if it is not a release journal or a
            record is damaged (the file is left as it is).
    """
    if not path.exists():
        replace_whole(path, MAGIC)
        return []
    data = path.read_bytes()
    if data[: len(MAGIC)] == MAGIC_V3:
        data = _upgrade(path, data)
    if data[: len(MAGIC)] != MAGIC:
        raise ConfigError(f"{str(path)!r} is not a vfl release journal (its header is wrong)")
    found = list(records(path, data, len(MAGIC)))
    for record in found:
        if record.tag not in (_EVENT_TAG, _RELEASE_TAG, _EXACT_TAG):
            raise ConfigError(
                f"release journal {str(path)!r} holds an unknown record {record.tag!r} at byte"
                f" {record.offset}: the file is damaged"
            )
    end = found[-1].end if found else len(MAGIC)
    if end < len(data):
        drop_torn_tail(path, end, len(data))
    return found


def _upgrade(path: Path, data: bytes) -> bytes:
    """Rewrite a version 3 journal (no checksums) as version 4, keeping a copy of it first."""
    upgraded = MAGIC + b"".join(frame(tag, body) for tag, body in _v3_records(path, data))
    copy = keep_copy(path, "v3")
    replace_whole(path, upgraded)
    log.info(
        "release journal %s upgraded to version 4 (checksummed); version 3 kept in %s", path, copy
    )
    return upgraded


def _v3_records(path: Path, data: bytes) -> list[tuple[bytes, bytes]]:
    """The complete records of a version 3 journal, as (tag, body); an incomplete tail is left."""
    found, offset = [], len(MAGIC_V3)
    while offset < len(data):
        tag = data[offset : offset + 1]
        if tag == _EVENT_TAG:
            end = offset + 1 + _EVENT.size
            body = data[offset + 1 : end]
        elif tag in (_RELEASE_TAG, _EXACT_TAG) and offset + 1 + _COUNT.size <= len(data):
            (count,) = _COUNT.unpack_from(data, offset + 1)
            end = offset + 1 + _COUNT.size + _KEY_SIZE * count
            body = data[offset + 1 + _COUNT.size : end]
        elif tag in (_RELEASE_TAG, _EXACT_TAG):
            break
        else:
            raise damaged(path, offset, f"an unknown record {tag!r} in a version 3 journal")
        if end > len(data):
            break
        found.append((tag, body))
        offset = end
    return found


class _RowsOf:
    """Maps ID keys to the rows of the current table that hold them (others are dropped)."""

    def __init__(self, keys: Keys) -> None:
        self._order = np.argsort(keys, kind="stable")
        self._sorted = keys[self._order]

    def __call__(self, wanted: npt.NDArray[np.generic]) -> Rows:
        keys = wanted.astype(np.uint64)
        at = np.searchsorted(self._sorted, keys)
        inside = at < len(self._sorted)
        hit = inside.copy()
        hit[inside] = self._sorted[at[inside]] == keys[inside]
        rows: Rows = self._order[at[hit]].astype(np.int64)
        return rows


def _event(path: Path, record: Record) -> PbmEvent:
    if len(record.body) != _EVENT.size:
        raise damaged(path, record.offset, f"a setting of {len(record.body)} bytes")
    trials, beta, parties, width = _EVENT.unpack(record.body)
    try:
        return PbmEvent(trials=trials, beta=beta, parties=parties, dimension=width)
    except ConfigError as error:
        raise ConfigError(
            f"release journal {str(path)!r} holds an invalid setting at byte {record.offset}"
            f" ({error}): the file is damaged"
        ) from None


def _keys_of(path: Path, record: Record) -> npt.NDArray[np.generic]:
    if len(record.body) % _KEY_SIZE:
        raise damaged(path, record.offset, f"a list of keys of {len(record.body)} bytes")
    return np.frombuffer(record.body, "<u8")
