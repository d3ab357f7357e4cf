"""Cutting wire frames into gRPC chunks and putting them back together, with checks.

A frame (``vfl.wire.encode``'s bytes) larger than the chunk size travels as consecutive
``Chunk`` messages (``proto/vfl.proto``) with the same message id. The receiver never trusts a
size it has not checked: the total a message announces is compared with the frame limit before
anything is buffered, every chunk must continue the message in order, and the pieces must add up
to exactly the announced total. A chunk that breaks these rules drops the message it belongs to;
the caller logs the reason and carries on with the next message.
"""

from __future__ import annotations

from dataclasses import dataclass

from vfl.errors import WireError
from vfl.transport.proto.vfl_pb2 import Chunk

GRPC_PREFIX_BYTES = 5
"""gRPC's per-message framing: a 1-byte compression flag and a 4-byte length."""

DEFAULT_CHUNK_BYTES = 1024 * 1024
"""Frame bytes per chunk; well under gRPC's 4 MiB default message limit."""

CHUNK_OVERHEAD_BYTES = 64
"""Upper bound on a serialized chunk's bytes besides its data (five small fields)."""


def split_frame(message_id: int, frame: bytes, *, chunk_bytes: int) -> list[bytes]:
    """Serialized chunks carrying ``frame``, each with at most ``chunk_bytes`` of it.

    Example:
        >>> chunks = split_frame(7, b"abcdefgh", chunk_bytes=3)
        >>> [Chunk.FromString(c).data for c in chunks]
        [b'abc', b'def', b'gh']
    """
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
    total = len(frame)
    count = max(1, -(-total // chunk_bytes))
    if count == 1:  # the common case: no slicing copy
        return [
            Chunk(
                message_id=message_id, index=0, count=1, total_bytes=total, data=frame
            ).SerializeToString()
        ]
    view = memoryview(frame)
    return [
        Chunk(
            message_id=message_id,
            index=index,
            count=count,
            total_bytes=total,
            data=bytes(view[index * chunk_bytes : (index + 1) * chunk_bytes]),
        ).SerializeToString()
        for index in range(count)
    ]


def parse_chunk(raw: bytes, *, chunk_bytes: int) -> Chunk:
    """Parse one serialized chunk, refusing one larger than a chunk can legitimately be.

    Raises:
        WireError: if ``raw`` is too large or is not a ``Chunk``.
    """
    limit = chunk_bytes + CHUNK_OVERHEAD_BYTES
    if len(raw) > limit:
        raise WireError(f"chunk of {len(raw)} bytes exceeds the limit of {limit} bytes")
    try:
        chunk: Chunk = Chunk.FromString(raw)
    except Exception as error:  # protobuf raises its own DecodeError
        raise WireError(f"bytes are not a Chunk: {error}") from None
    return chunk


@dataclass(frozen=True)
class Assembled:
    """A complete frame and the id of the message it belongs to."""

    message_id: int
    frame: bytes


class Reassembler:
    """Rebuilds frames from the chunks of one stream, in arrival order.

    Args:
        max_bytes: Largest frame accepted (checked against the announced total first).
        chunk_bytes: Largest chunk payload accepted.
    """

    def __init__(self, *, max_bytes: int, chunk_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.chunk_bytes = chunk_bytes
        self._message_id = -1
        self._parts: list[bytes] = []
        self._received = 0
        self._count = 0
        self._total = 0

    def add_serialized(self, raw: bytes) -> Assembled | None:
        """Parse and take the next serialized chunk (``parse_chunk`` then ``add``).

        Raises:
            WireError: if the bytes are not a chunk or the chunk breaks the rules.
        """
        return self.add(parse_chunk(raw, chunk_bytes=self.chunk_bytes))

    def add(self, chunk: Chunk) -> Assembled | None:
        """Take the next chunk; returns the frame once its last chunk arrived.

        Raises:
            WireError: if the chunk breaks the rules; the partial message is dropped.
        """
        try:
            return self._add(chunk)
        except WireError:
            self._reset()
            raise

    def _add(self, chunk: Chunk) -> Assembled | None:
        if len(chunk.data) > self.chunk_bytes:
            raise WireError(
                f"message {chunk.message_id}: chunk of {len(chunk.data)} bytes exceeds the"
                f" chunk limit of {self.chunk_bytes}"
            )
        if chunk.index == 0:
            if self._parts:
                raise WireError(
                    f"message {self._message_id} was interrupted after {len(self._parts)} of"
                    f" {self._count} chunks by message {chunk.message_id}"
                )
            self._start(chunk)
        elif (chunk.message_id, chunk.index, chunk.count, chunk.total_bytes) != (
            self._message_id,
            len(self._parts),
            self._count,
            self._total,
        ):
            raise WireError(
                f"chunk {chunk.index}/{chunk.count} of message {chunk.message_id} does not"
                f" continue message {self._message_id} (expected chunk {len(self._parts)})"
            )
        self._received += len(chunk.data)
        if self._received > self._total:
            raise WireError(
                f"message {chunk.message_id} sends more than its announced {self._total} bytes"
            )
        self._parts.append(chunk.data)
        if len(self._parts) < self._count:
            return None
        if self._received != self._total:
            raise WireError(
                f"message {chunk.message_id} announced {self._total} bytes but carried"
                f" {self._received}"
            )
        frame = self._parts[0] if self._count == 1 else b"".join(self._parts)
        message_id = self._message_id
        self._reset()
        return Assembled(message_id, frame)

    def _start(self, chunk: Chunk) -> None:
        if chunk.total_bytes > self.max_bytes:
            raise WireError(
                f"message {chunk.message_id} announces {chunk.total_bytes} bytes, over the"
                f" limit of {self.max_bytes} bytes"
            )
        needed = max(1, -(-chunk.total_bytes // self.chunk_bytes))
        if not needed <= chunk.count <= max(1, chunk.total_bytes):
            raise WireError(
                f"message {chunk.message_id} of {chunk.total_bytes} bytes claims {chunk.count}"
                f" chunks; valid: {needed} to {max(1, chunk.total_bytes)}"
            )
        self._message_id = chunk.message_id
        self._count = chunk.count
        self._total = chunk.total_bytes

    def _reset(self) -> None:
        self._message_id = -1
        self._parts = []
        self._received = 0
        self._count = 0
        self._total = 0
