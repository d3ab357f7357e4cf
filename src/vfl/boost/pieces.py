"""Requests larger than one frame: the label holder's frame sent in pieces, put together again.

A transport refuses frames over its limit (256 MiB by default; a ``BoostGradients`` frame takes
512 bytes per training row at 2048 bits, so about 524,000 rows fill it). ``pieces`` cuts such a
request's encoded frame into ``BoostPart`` messages (wire kind 49), each a frame within the limit;
the holder answers each but the last with an ``Ack``, and the last with the reply to the whole
request, which ``PieceAssembler`` has put back together and checked: pieces in order, one request
at a time, and no more bytes than the holder could legitimately be sent (its bound).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from vfl.errors import WireError
from vfl.wire import Ack, Message, encode, register
from vfl.wire.schema import SERVER_ID


@register(kind=49)
@dataclass(frozen=True)
class BoostPart(Message):
    """Label holder to passive: piece ``index`` of ``count`` of one request's encoded frame.

    Attributes:
        index: This piece's position, from 0.
        count: How many pieces the request takes.
        total_bytes: The whole frame's bytes.
        data: This piece's bytes of the frame.
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = ()
    index: int
    count: int
    total_bytes: int
    data: bytes


def part_overhead(round_: int) -> int:
    """Bytes of a ``BoostPart`` frame besides its data."""
    return len(encode(BoostPart(round_, 0, 0, 0, b""), sender=SERVER_ID))


def pieces(message: Message, max_frame_bytes: int) -> list[Message]:
    """``message`` alone if its frame fits ``max_frame_bytes``, else the ``BoostPart``s of it.

    Raises:
        ValueError: if the limit leaves no room for a piece's data.
    """
    frame = encode(message, sender=SERVER_ID)
    if len(frame) <= max_frame_bytes:
        return [message]
    room = max_frame_bytes - part_overhead(message.round)
    if room < 1:
        raise ValueError(f"a frame limit of {max_frame_bytes} bytes leaves no room for a piece")
    count = -(-len(frame) // room)
    view = memoryview(frame)
    return [
        BoostPart(
            message.round,
            index,
            count,
            len(frame),
            bytes(view[index * room : (index + 1) * room]),
        )
        for index in range(count)
    ]


class PieceAssembler:
    """Puts one request's pieces back together, refusing what breaks the rules.

    Args:
        party: The holder's party id (named in errors).
    """

    def __init__(self, party: int) -> None:
        self.party = party
        self._parts: list[bytes] = []
        self._expected: tuple[int, int, int] = (0, 0, 0)
        self._received = 0

    def add(self, part: BoostPart, limit: int) -> bytes | None:
        """Take the next piece; the whole frame once its last piece came (else ``None``).

        Args:
            part: The piece.
            limit: The most bytes a whole request to this holder may have.

        Raises:
            WireError: if the piece does not continue the request, announces more than
                ``limit`` bytes, or the pieces do not add up; the partial request is dropped.
        """
        try:
            return self._add(part, limit)
        except WireError:
            self._parts, self._received = [], 0
            raise

    def _add(self, part: BoostPart, limit: int) -> bytes | None:
        if part.index == 0:
            if self._parts:
                raise WireError(
                    f"party {self.party}: a request in {self._expected[1]} pieces was"
                    f" interrupted after {len(self._parts)} by a new one"
                )
            if not 0 < part.total_bytes <= limit:
                raise WireError(
                    f"party {self.party}: a request in pieces announces {part.total_bytes}"
                    f" bytes; this holder accepts 1 to {limit}"
                )
            if not 1 < part.count <= part.total_bytes:
                raise WireError(
                    f"party {self.party}: a request of {part.total_bytes} bytes claims"
                    f" {part.count} pieces"
                )
            self._expected = (part.round, part.count, part.total_bytes)
        elif (part.round, part.count, part.total_bytes) != self._expected or part.index != len(
            self._parts
        ):
            raise WireError(
                f"party {self.party}: piece {part.index} of {part.count} does not continue the"
                f" request in pieces (expected piece {len(self._parts)} of {self._expected[1]})"
            )
        self._received += len(part.data)
        if self._received > self._expected[2]:
            raise WireError(
                f"party {self.party}: the pieces carry more than the announced"
                f" {self._expected[2]} bytes"
            )
        self._parts.append(part.data)
        if len(self._parts) < self._expected[1]:
            return None
        if self._received != self._expected[2]:
            raise WireError(
                f"party {self.party}: the pieces carry {self._received} bytes of an announced"
                f" {self._expected[2]}"
            )
        frame = b"".join(self._parts)
        self._parts, self._received = [], 0
        return frame


def part_ack(part: BoostPart) -> Message:
    """The holder's answer to every piece but the last."""
    return Ack(part.round)
