"""A party's release journal on disk: each PBM release of training rows, written before it leaves.

``vfl.privacy.releases.ReleaseGuard`` counts and limits a party's releases; this file keeps the
counts across restarts of the party, new alignments and later runs: it counts rows of the
party's own training table and is named after a digest of that table's IDs
(``releases-<digest>.bin`` in the state directory), so every run over the same table adds to
one count, and a changed table starts another. Layout (little-endian)::

    "vfl-releases/v2" LF   16 bytes
    u64 rows               rows of the training table
    32 bytes               SHA-256 of its IDs (``table_digest``)
    records, each a tag byte:
      "E"  u32 trials, f64 beta, u32 parties, u32 dimension: the PBM setting of what follows
      "R"  u32 n, n u32 table rows: one release

Each record is written, flushed and synced before the release's counts are sent, so a process
killed mid-write leaves a torn last record of a release that never left: it is dropped (with a
warning) when the file is opened again; a write that fails in a running process is undone.
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import numpy as np

from vfl.errors import ConfigError
from vfl.privacy.events import PbmEvent
from vfl.privacy.releases import Rows

log = logging.getLogger(__name__)

MAGIC = b"vfl-releases/v2\n"
_HEADER = struct.Struct("<Q32s")
_EVENT = struct.Struct("<IdII")
_COUNT = struct.Struct("<I")
_MOST_ROWS = 1 << 32
_EVENT_TAG, _RELEASE_TAG = b"E", b"R"


def table_digest(ids: Iterable[bytes]) -> bytes:
    """SHA-256 of a table's IDs in row order, each preceded by its length (u32)."""
    digest = hashlib.sha256()
    for value in ids:
        digest.update(_COUNT.pack(len(value)) + value)
    return digest.digest()


class ReleaseFile:
    """Appends releases to a journal file (``open_journal`` reads it back first)."""

    def __init__(self, path: Path, handle: BinaryIO, event: PbmEvent | None) -> None:
        self.path = path
        self._handle = handle
        self._event = event  # the setting of the last release written

    def append(self, rows: Rows, event: PbmEvent) -> None:
        """Write one release of table ``rows`` under ``event`` and sync it to disk.

        Raises:
            OSError: if it cannot be written; the file is then as it was before the call.
        """
        record = b""
        if event != self._event:
            record = _EVENT_TAG + _EVENT.pack(
                event.trials, event.beta, event.parties, event.dimension
            )
        record += _RELEASE_TAG + _COUNT.pack(len(rows)) + rows.astype("<u4").tobytes()
        start = self._handle.tell()
        try:
            self._handle.write(record)
            self._handle.flush()
            os.fsync(self._handle.fileno())
        except OSError:
            self._handle.seek(start)
            self._handle.truncate()
            raise
        self._event = event

    def close(self) -> None:
        """Close the file."""
        self._handle.close()


def open_journal(path: Path, rows: int, digest: bytes) -> tuple[ReleaseFile, Rows, set[PbmEvent]]:
    """The journal at ``path`` for a table of ``rows`` rows whose IDs hash to ``digest``.

    Returns the journal, the use count of each table row so far, and every PBM setting a
    release was made under. Creates the file if it is missing.

    Raises:
        ConfigError: naming the file, if it is not a release journal, was written for another
            table, or names a row outside it.
    """
    if not 0 < rows < _MOST_ROWS:
        raise ConfigError(f"a release journal holds 1..{_MOST_ROWS - 1} rows, got {rows}")
    uses = np.zeros(rows, dtype=np.int64)
    if not path.exists():
        _create(path, MAGIC + _HEADER.pack(rows, digest))
        handle = path.open("r+b")
        handle.seek(0, os.SEEK_END)
        return ReleaseFile(path, handle, None), uses, set()
    data = path.read_bytes()
    start = len(MAGIC) + _HEADER.size
    if data[: len(MAGIC)] != MAGIC or len(data) < start:
        raise ConfigError(f"{str(path)!r} is not a vfl release journal (its header is wrong)")
    held, held_digest = _HEADER.unpack_from(data, len(MAGIC))
    if (held, held_digest) != (rows, digest):
        raise ConfigError(
            f"release journal {str(path)!r} counts another training table ({held} rows, IDs"
            f" {held_digest.hex()[:16]}) than this one ({rows} rows, IDs {digest.hex()[:16]})"
        )
    end, events, last = _read_records(data, start, uses, path)
    if end < len(data):
        log.warning(
            "release journal %s ends in a torn record (%d bytes) of a release that was never"
            " sent; dropping it",
            path,
            len(data) - end,
        )
        os.truncate(path, end)
    handle = path.open("r+b")
    handle.seek(end)
    return ReleaseFile(path, handle, last), uses, events


def _create(path: Path, header: bytes) -> None:
    """Write a new journal whole or not at all, and make its name durable."""
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as handle:
        handle.write(header)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _read_records(
    data: bytes, offset: int, uses: Rows, path: Path
) -> tuple[int, set[PbmEvent], PbmEvent | None]:
    """Count every whole release; the offset after the last whole record, the events, the last."""
    events: set[PbmEvent] = set()
    event: PbmEvent | None = None
    while offset < len(data):
        tag = data[offset : offset + 1]
        if tag == _EVENT_TAG:
            end = offset + 1 + _EVENT.size
            if end > len(data):
                break
            trials, beta, parties, dimension = _EVENT.unpack_from(data, offset + 1)
            try:
                event = PbmEvent(trials=trials, beta=beta, parties=parties, dimension=dimension)
            except ConfigError as error:
                raise ConfigError(
                    f"release journal {str(path)!r} holds an invalid setting at byte {offset}"
                    f" ({error}): the file is corrupt"
                ) from None
        elif tag == _RELEASE_TAG:
            if offset + 1 + _COUNT.size > len(data):
                break
            (count,) = _COUNT.unpack_from(data, offset + 1)
            end = offset + 1 + _COUNT.size + 4 * count
            if end > len(data):
                break
            if event is None:
                raise ConfigError(f"release journal {str(path)!r}: a release before any setting")
            rows = np.frombuffer(data, dtype="<u4", count=count, offset=offset + 1 + _COUNT.size)
            if count and int(rows.max()) >= len(uses):
                raise ConfigError(
                    f"release journal {str(path)!r} names row {int(rows.max())} at byte"
                    f" {offset}, outside its {len(uses)} rows: the file is corrupt"
                )
            np.add.at(uses, rows.astype(np.int64), 1)
            events.add(event)
        else:
            raise ConfigError(
                f"release journal {str(path)!r} holds an unknown record {tag!r} at byte"
                f" {offset}: the file is corrupt"
            )
        offset = end
    return offset, events, event
