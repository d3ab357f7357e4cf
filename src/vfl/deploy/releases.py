"""A party's release journal on disk: each PBM release of training rows, written before it leaves.

``vfl.privacy.releases.ReleaseGuard`` counts and limits a party's releases; this file keeps the
counts across restarts of the party process. One file per alignment (its rows are that
alignment's training rows), in the party's state directory, so the counts also carry over to
later runs on the same alignment: the same people's data. Layout (little-endian)::

    "vfl-releases/v1" LF   16 bytes
    u64 rows               the alignment's training rows
    records                u32 n, then n u32 row positions: one release each

Each record is written, flushed and synced before the release's counts are sent, so a process
killed mid-write leaves a torn last record of a release that never left: it is dropped (with a
warning) when the file is opened again.
"""

from __future__ import annotations

import logging
import os
import struct
from pathlib import Path
from typing import BinaryIO

import numpy as np

from vfl.errors import ConfigError
from vfl.privacy.releases import Rows

log = logging.getLogger(__name__)

MAGIC = b"vfl-releases/v1\n"
_HEADER = struct.Struct("<Q")
_COUNT = struct.Struct("<I")
_MOST_ROWS = 1 << 32


class ReleaseFile:
    """Appends releases to a journal file (``open_journal`` reads it back first)."""

    def __init__(self, path: Path, handle: BinaryIO) -> None:
        self.path = path
        self._handle = handle

    def append(self, rows: Rows) -> None:
        """Write one release of ``rows`` and sync it to disk."""
        self._handle.write(_COUNT.pack(len(rows)) + rows.astype("<u4").tobytes())
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        """Close the file."""
        self._handle.close()


def open_journal(path: Path, rows: int) -> tuple[ReleaseFile, Rows]:
    """The journal at ``path`` for ``rows`` training rows and the use count of each row so far.

    Creates the file if it is missing.

    Raises:
        ConfigError: naming the file, if it is not a release journal, was written for another
            number of rows, or names a row outside them.
    """
    if not 0 < rows < _MOST_ROWS:
        raise ConfigError(f"a release journal holds 1..{_MOST_ROWS - 1} rows, got {rows}")
    uses = np.zeros(rows, dtype=np.int64)
    if not path.exists():
        with path.open("wb") as handle:
            handle.write(MAGIC + _HEADER.pack(rows))
            handle.flush()
            os.fsync(handle.fileno())
        return ReleaseFile(path, path.open("ab")), uses
    data = path.read_bytes()
    start = len(MAGIC) + _HEADER.size
    if data[: len(MAGIC)] != MAGIC or len(data) < start:
        raise ConfigError(f"{str(path)!r} is not a vfl release journal (its header is wrong)")
    (held,) = _HEADER.unpack_from(data, len(MAGIC))
    if held != rows:
        raise ConfigError(
            f"release journal {str(path)!r} counts {held} training rows, but this alignment has"
            f" {rows}; keep the journal with the state directory it was written in"
        )
    end = _read_records(data, start, uses, path)
    if end < len(data):
        log.warning(
            "release journal %s ends in a torn record (%d bytes) of a release that was never"
            " sent; dropping it",
            path,
            len(data) - end,
        )
        os.truncate(path, end)
    return ReleaseFile(path, path.open("ab")), uses


def _read_records(data: bytes, offset: int, uses: Rows, path: Path) -> int:
    """Add every whole record's rows to ``uses``; the offset after the last whole record."""
    while offset + _COUNT.size <= len(data):
        (count,) = _COUNT.unpack_from(data, offset)
        end = offset + _COUNT.size + 4 * count
        if end > len(data):
            break
        rows = np.frombuffer(data, dtype="<u4", count=count, offset=offset + _COUNT.size)
        if count and int(rows.max()) >= len(uses):
            raise ConfigError(
                f"release journal {str(path)!r} names row {int(rows.max())} at byte {offset},"
                f" outside its {len(uses)} rows: the file is corrupt"
            )
        np.add.at(uses, rows.astype(np.int64), 1)
        offset = end
    return offset
