"""The frame format: message objects to bytes and back, with validation on the way in.

A frame is a fixed 10-byte header followed by the message body::

    offset  size  field
    0       2     magic b"VF"
    2       1     format version (2)
    3       1     message kind (see vfl.wire.messages)
    4       2     sender id, u16 (0 = server, 1..M = parties)
    6       4     round, u32
    10      ...   body: the message's fields in declaration order (vfl.wire.fields)

No pickle, no field tags, no padding. ``docs/wire.md`` is the normative description.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from vfl.errors import WireError
from vfl.wire.fields import Chunks, Reader
from vfl.wire.schema import Message, schema_for, schema_for_kind

MAGIC = b"VF"
VERSION = 2
HEADER = struct.Struct("<2sBBHI")
HEADER_SIZE = HEADER.size
DEFAULT_MAX_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Frame:
    """A decoded frame: who sent it and what it says."""

    sender: int
    message: Message


def encode(message: Message, *, sender: int) -> bytes:
    """Encode ``message`` from ``sender`` into one frame.

    Raises:
        WireError: if a field value cannot be encoded or the round/sender are out of range.
    """
    schema = schema_for(type(message))
    if not 0 <= message.round <= 0xFFFFFFFF:
        raise WireError(f"round {message.round} does not fit the u32 header field")
    if not 0 <= sender <= 0xFFFF:
        raise WireError(f"sender {sender} does not fit the u16 header field")
    out: Chunks = [HEADER.pack(MAGIC, VERSION, schema.kind, sender, message.round)]
    for name, encoding in zip(schema.names, schema.encodings, strict=True):
        encoding.encode(getattr(message, name), out)
    return b"".join(out)


def decode(data: bytes | bytearray | memoryview, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Frame:
    """Decode and structurally validate one frame.

    Checks the magic, version, kind, every length and shape against the bytes present, and that
    nothing trails the body. Semantic checks (expected sender, round, shapes) belong to the role
    that receives the message.

    Raises:
        WireError: naming what is wrong with the bytes.
    """
    if len(data) > max_bytes:
        raise WireError(f"frame of {len(data)} bytes exceeds the limit of {max_bytes} bytes")
    reader = Reader(memoryview(data))
    magic, version, kind, sender, round_ = reader.unpack(HEADER)
    if magic != MAGIC:
        raise WireError(f"bad magic {bytes(magic)!r}; a vfl frame starts with {MAGIC!r}")
    if version != VERSION:
        raise WireError(f"unsupported wire version {version}; this build speaks {VERSION}")
    schema = schema_for_kind(kind)
    if schema is None:
        raise WireError(f"unknown message kind {kind}")
    values = {
        name: encoding.decode(reader)
        for name, encoding in zip(schema.names, schema.encodings, strict=True)
    }
    if reader.remaining:
        raise WireError(f"{reader.remaining} unexpected bytes after a {schema.cls.__name__} body")
    return Frame(sender=sender, message=schema.cls(round=round_, **values))


def peek_kind(data: bytes | memoryview) -> int:
    """The kind byte of a frame, without decoding it (for ledgers)."""
    if len(data) < HEADER_SIZE:
        raise WireError(f"frame of {len(data)} bytes is shorter than the {HEADER_SIZE}-byte header")
    return int(data[3])
