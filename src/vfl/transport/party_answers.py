"""The party's side of a stream: read each request, answer it once, resend a lost reply.

Requests are rebuilt from the server's chunks and answered with the reply frame the handler
(usually ``PartyEndpoint.handle_frame``) returns. The last replies are kept by message id: a
request sent again after a lost reply is answered from that cache, so a gradient is never
applied twice. A handler that raises is reported to the server as a ``FailureReply``, never a
crash; ``Shutdown`` is answered, then the party half-closes the stream and stops.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TypeAlias

import grpc

from vfl.errors import WireError
from vfl.transport.chunks import Assembled, Reassembler, split_frame
from vfl.transport.link import FailureReply, WireCounters
from vfl.transport.retry import Attempt
from vfl.wire import Shutdown, encode
from vfl.wire.frames import HEADER, peek_kind

log = logging.getLogger("vfl.transport.grpc_party")  # log lines name the link end

FrameHandler = Callable[[bytes], bytes]
"""Request frame in, reply frame out (``PartyEndpoint.handle_frame``)."""

REPLY_CACHE_SIZE = 8
"""How many of its last replies a party keeps to answer a request sent again."""

Call: TypeAlias = grpc.aio.StreamStreamCall[bytes, bytes]


@dataclass(frozen=True)
class Ended:
    """How one connection attempt ended: stopped (``None``) or a failure, and gRPC's details."""

    failure: Attempt | None
    details: str = ""


class Answering:
    """Answers the requests of one party's streams, with its reply cache.

    Args:
        party_id: This party's id.
        handler: Answers one request frame with one reply frame.
        wire: Counts the bytes read and written.
        max_bytes: Largest frame accepted.
        chunk_bytes: Frame bytes per chunk.
    """

    def __init__(
        self,
        party_id: int,
        handler: FrameHandler,
        wire: WireCounters,
        *,
        max_bytes: int,
        chunk_bytes: int,
    ) -> None:
        self.party_id = party_id
        self.handler = handler
        self.wire = wire
        self.max_bytes = max_bytes
        self.chunk_bytes = chunk_bytes
        self._replies: OrderedDict[int, list[bytes]] = OrderedDict()

    async def answer_all(self, call: Call) -> Ended:
        """Answer every request on ``call`` until the server ends it or sends ``Shutdown``."""
        reassembler = Reassembler(max_bytes=self.max_bytes, chunk_bytes=self.chunk_bytes)
        async for raw in chunks_of(call):
            self.wire.add_received("all", len(raw))
            try:
                item = reassembler.add_serialized(raw)
            except WireError as error:
                log.warning("party %d rejected a frame from the server: %s", self.party_id, error)
                continue
            if item is None:
                continue
            chunks, stop = self._answer(item)
            for chunk in chunks:
                self.wire.add_sent("all", len(chunk))
                await call.write(chunk)
            if stop:
                await call.done_writing()  # half-close; the server then ends the stream
                await _drain(call)
                return Ended(None)
        return Ended(Attempt.LOST, "the stream ended")

    def _answer(self, item: Assembled) -> tuple[list[bytes], bool]:
        cached = self._replies.get(item.message_id)
        if cached is not None:
            log.info(
                "party %d: request %d came again; resending the reply",
                self.party_id,
                item.message_id,
            )
            return cached, False
        stop = False
        try:
            reply = self.handler(item.frame)
            stop = peek_kind(item.frame) == Shutdown.KIND
        except Exception as error:  # reported to the server as data, never a crash
            log.warning("party %d failed a request: %r", self.party_id, error)
            reply = encode(
                FailureReply(round=_round_of(item.frame), error=repr(error)[:4000]),
                sender=self.party_id,
            )
        chunks = split_frame(item.message_id, reply, chunk_bytes=self.chunk_bytes)
        self._replies[item.message_id] = chunks
        while len(self._replies) > REPLY_CACHE_SIZE:
            self._replies.popitem(last=False)
        return chunks, stop


async def chunks_of(call: Call) -> AsyncIterator[bytes]:
    """The raw chunks the server writes, until it ends the stream."""
    while True:
        raw = await call.read()
        if raw is grpc.aio.EOF:
            return
        assert isinstance(raw, bytes)
        yield raw


async def _drain(call: Call) -> None:
    """Read a stream to its end, ignoring how it ends (after Shutdown nothing matters)."""
    try:
        async for _ in chunks_of(call):
            pass
    except grpc.RpcError:
        pass
    except asyncio.CancelledError:
        if cancelling():
            raise


def cancelling() -> bool:
    """Whether the running task has been asked to cancel (not just a gRPC call it awaited)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _round_of(frame: bytes) -> int:
    """The round in a frame's header, or 0 if the frame is too short to hold one."""
    if len(frame) < HEADER.size:
        return 0
    return int(HEADER.unpack_from(frame)[4])
