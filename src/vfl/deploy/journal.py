"""Append-only record files whose every record carries checksums: a torn tail told from damage.

After a 16-byte header naming the format and its version, each record is::

    tag u8 | length u32 | CRC-32 of (tag, length) u32 | body (length bytes) | CRC-32 of body u32

(little-endian). A process killed while appending leaves a prefix of its last record: fewer
than the 9 bytes of a record head, or a head whose checksum holds and a body that the file ends
inside. Only such an incomplete last record is a **torn tail**; it is dropped, after a copy of
the whole file is kept beside it (``<name>.torn-<UTC time>``). A tail of zero bytes (an
extension the file system did not write before a power loss) is torn too. Anything else that
does not read back, a head or body whose checksum fails anywhere in the file, is **damage**:
the file is refused with its name, the byte offset and what to do, and is never shortened.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from vfl.errors import ConfigError
from vfl.results.files import keep_copy as kept_copy

log = logging.getLogger(__name__)

HEAD = struct.Struct("<cII")
"""tag, body length, CRC-32 of tag and length."""
CHECK = struct.Struct("<I")
"""CRC-32 of the body."""


class JournalDamaged(ConfigError):
    """A record file holds a record that does not read back; the message names file and offset."""


@dataclass(frozen=True)
class Record:
    """One complete record: its tag, its byte offset in the file, and its body."""

    tag: bytes
    offset: int
    body: bytes

    @property
    def end(self) -> int:
        """The offset of the byte after it."""
        return self.offset + HEAD.size + len(self.body) + CHECK.size


def frame(tag: bytes, body: bytes) -> bytes:
    """The bytes of one record."""
    head = tag + struct.pack("<I", len(body))
    return head + CHECK.pack(zlib.crc32(head)) + body + CHECK.pack(zlib.crc32(body))


def records(path: Path, data: bytes, start: int) -> Iterator[Record]:
    """The complete records of ``data`` from ``start`` on; stops before a torn tail.

    Raises:
        JournalDamaged: at the first record whose head or body checksum fails.
    """
    offset = start
    while offset < len(data):
        if len(data) - offset < HEAD.size:
            return
        tag, length, head_check = HEAD.unpack_from(data, offset)
        if zlib.crc32(data[offset : offset + 5]) != head_check:
            if not any(data[offset:]):
                return
            raise damaged(path, offset, "its head's checksum does not match")
        body_at = offset + HEAD.size
        end = body_at + length + CHECK.size
        if end > len(data):
            return
        body = data[body_at : body_at + length]
        if zlib.crc32(body) != CHECK.unpack_from(data, body_at + length)[0]:
            raise damaged(path, offset, "its body's checksum does not match")
        yield Record(tag, offset, body)
        offset = end


def damaged(path: Path, offset: int, what: str) -> JournalDamaged:
    """The refusal of a file damaged at ``offset``: what is wrong and what to do."""
    return JournalDamaged(
        f"{str(path)!r} is damaged at byte {offset} ({what}), so the records after it cannot be"
        " trusted; vfl never cuts such a file short. Restore it from a backup (moving it aside"
        " instead forgets every record it holds)"
    )


def keep_copy(path: Path, why: str) -> Path:
    """``results.files.keep_copy``, synced to disk."""
    copy = kept_copy(path, why)
    sync(copy)
    return copy


def drop_torn_tail(path: Path, end: int, size: int) -> None:
    """Cut ``path`` (``size`` bytes) back to ``end``, after keeping a copy of it whole."""
    copy = keep_copy(path, "torn")
    log.warning(
        "%s ends in an incomplete record (%d bytes, as a process killed while writing leaves"
        " it): dropping it; the file as it was is kept in %s",
        path,
        size - end,
        copy,
    )
    os.truncate(path, end)
    sync(path)


def replace_whole(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all, and make its name durable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    sync(path.parent)


def sync(path: Path) -> None:
    """Flush ``path`` (a file or a folder) to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
