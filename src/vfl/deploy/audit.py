"""A party's audit log: every frame it received, as JSON lines (``audit_log`` in PARTY.toml).

Each line is one JSON record and carries ``crc32``, the CRC-32 of the record without it (JSON
with sorted keys), so that an auditor can tell an edited or damaged record from a sound one
(``record_is_sound``). A line is written whole with its newline in one write; a process killed
mid-write leaves a last line without its newline, which the next process ends with a newline
(the torn line stays, as evidence) before it appends.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import time
import zlib
from pathlib import Path
from typing import Any

from vfl.errors import WireError
from vfl.transport.grpc_party import FrameHandler
from vfl.transport.link import is_control
from vfl.wire import decode
from vfl.wire.frames import peek_kind

log = logging.getLogger(__name__)

CHECKSUM = "crc32"


def audited(handler: FrameHandler, path: Path) -> FrameHandler:
    """Wrap a frame handler so that every received frame is logged to a JSONL file.

    Control frames (alignment, setup) are recorded in full (base64); training frames by kind,
    message type, round and size only. The log shows what the party was ever told.
    """
    _end_a_torn_line(path)

    def handle(frame: bytes) -> bytes:
        record: dict[str, Any] = {"time": time.time(), "bytes": len(frame)}
        try:
            kind = peek_kind(frame)
            record["kind"] = kind
            message = decode(frame).message
            record["message"] = type(message).__name__
            record["round"] = message.round
            if is_control(kind):
                record["data"] = base64.b64encode(frame).decode()
        except WireError as error:
            record["error"] = str(error)
            record["data"] = base64.b64encode(frame).decode()
        record[CHECKSUM] = _checksum(record)
        line = (json.dumps(record) + "\n").encode()
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(descriptor, line)
        finally:
            os.close(descriptor)
        return handler(frame)

    return handle


def record_is_sound(record: dict[str, Any]) -> bool:
    """Whether an audit record's ``crc32`` matches the rest of it."""
    rest = {key: value for key, value in record.items() if key != CHECKSUM}
    return record.get(CHECKSUM) == _checksum(rest)


def _checksum(record: dict[str, Any]) -> int:
    return zlib.crc32(json.dumps(record, sort_keys=True).encode())


def _end_a_torn_line(path: Path) -> None:
    """End a last line a killed process left without its newline, so appends start afresh."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) != b"\n":
            handle.write(b"\n")
            log.warning("audit log %s ended in a torn line; it is kept, ended by a newline", path)
