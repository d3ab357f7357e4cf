"""A party's release journal on disk: each release of training rows, written before it leaves.

``vfl.privacy.releases.ReleaseGuard`` counts and limits a party's releases; this file keeps the
counts across restarts, alignments, runs and edits of the party's table. It records each
released row by a key of its sample ID (the first 8 bytes of SHA-256 of the ID), so a row
added, dropped or moved in the table keeps its count. One file, ``releases.bin``, in the
party's ``privacy.journal_dir`` (default: its state directory). Layout (little-endian)::

    "vfl-releases/v3" LF   16 bytes
    records, each a tag byte:
      "E"  u32 trials, f64 beta, u32 parties, u32 dimension: the PBM setting of what follows
      "R"  u32 n, n u64 ID keys: one release through PBM
      "X"  u32 n, n u64 ID keys: rows a run without PBM trained on (their embeddings left
           exact, so their epsilon is infinite)

Each record is written and synced before what it records leaves the party, so a process killed
mid-write leaves a torn last record of something that never left: it is dropped (with a
warning) when the file is opened again. A write that fails in a running process is undone, or
the journal refuses every later write.
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

from vfl.errors import ConfigError
from vfl.privacy.events import PbmEvent
from vfl.privacy.releases import Rows

log = logging.getLogger(__name__)

MAGIC = b"vfl-releases/v3\n"
FILE_NAME = "releases.bin"
_EVENT = struct.Struct("<IdII")
_COUNT = struct.Struct("<I")
_EVENT_TAG, _RELEASE_TAG, _EXACT_TAG = b"E", b"R", b"X"

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
            record = _EVENT_TAG + _EVENT.pack(
                event.trials, event.beta, event.parties, event.dimension
            )
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
        return tag + _COUNT.pack(len(rows)) + self._keys[rows].astype("<u8").tobytes()

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
    missing.

    Raises:
        ConfigError: naming the file, if it is not a release journal or is corrupt.
    """
    uses = np.zeros(len(keys), dtype=np.int64)
    exact = np.zeros(len(keys), dtype=np.int64)
    events: set[PbmEvent] = set()
    last: PbmEvent | None = None
    if not path.exists():
        _create(path)
        return ReleaseFile(path, keys, None), uses, exact, events
    data = path.read_bytes()
    if data[: len(MAGIC)] != MAGIC:
        raise ConfigError(f"{str(path)!r} is not a vfl release journal (its header is wrong)")
    rows_of = _RowsOf(keys)
    offset = len(MAGIC)
    while offset < len(data):
        tag = data[offset : offset + 1]
        if tag == _EVENT_TAG:
            end = offset + 1 + _EVENT.size
            if end > len(data):
                break
            last = _event(path, offset, *_EVENT.unpack_from(data, offset + 1))
        elif tag in (_RELEASE_TAG, _EXACT_TAG):
            if offset + 1 + _COUNT.size > len(data):
                break
            (count,) = _COUNT.unpack_from(data, offset + 1)
            end = offset + 1 + _COUNT.size + 8 * count
            if end > len(data):
                break
            found = rows_of(np.frombuffer(data, "<u8", count, offset + 1 + _COUNT.size))
            if tag == _EXACT_TAG:
                np.add.at(exact, found, 1)
            elif last is None:
                raise ConfigError(f"release journal {str(path)!r}: a release before any setting")
            else:
                np.add.at(uses, found, 1)
                events.add(last)
        else:
            raise ConfigError(
                f"release journal {str(path)!r} holds an unknown record {tag!r} at byte"
                f" {offset}: the file is corrupt"
            )
        offset = end
    if offset < len(data):
        log.warning(
            "release journal %s ends in a torn record (%d bytes) of something that never left;"
            " dropping it",
            path,
            len(data) - offset,
        )
        os.truncate(path, offset)
    return ReleaseFile(path, keys, last), uses, exact, events


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


def _event(path: Path, offset: int, trials: int, beta: float, parties: int, width: int) -> PbmEvent:
    try:
        return PbmEvent(trials=trials, beta=beta, parties=parties, dimension=width)
    except ConfigError as error:
        raise ConfigError(
            f"release journal {str(path)!r} holds an invalid setting at byte {offset} ({error}):"
            " the file is corrupt"
        ) from None


def _create(path: Path) -> None:
    """Write a new journal whole or not at all, and make its name durable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as handle:
        handle.write(MAGIC)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
