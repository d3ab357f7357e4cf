"""What the server accepts from a party's stream: chunks reassembled, each frame checked.

A reader rebuilds frames from a stream's chunks and checks each one (size before buffering,
structure, sender, kind for the phase, round, and the reply's type, sizes and shapes for its
request, ``Message.check_reply``) before it settles the open request with the same message id;
a bad frame is logged with its reason and dropped, and the open request keeps waiting.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from vfl.errors import WireError
from vfl.transport.base import check_reply
from vfl.transport.chunks import Reassembler, parse_chunk
from vfl.transport.link import CONTROL, FailureReply, RemoteFailure, WireCounters, is_control
from vfl.transport.pending import Pending, PendingTable
from vfl.wire import Message, decode

log = logging.getLogger("vfl.transport.grpc_server")  # log lines name the link end


class ReplyReader:
    """Reads parties' replies into the open requests they answer.

    Args:
        pending: The open requests, settled by the replies read here.
        wire: Counts the bytes read.
        max_bytes: Largest frame accepted.
        chunk_bytes: Frame bytes per chunk.
    """

    def __init__(
        self, pending: PendingTable, wire: WireCounters, *, max_bytes: int, chunk_bytes: int
    ) -> None:
        self._pending = pending
        self._wire = wire
        self._max_bytes = max_bytes
        self._chunk_bytes = chunk_bytes
        self.answered_by: dict[int, str] = {}
        """The process instance that sent each party's last accepted reply (under the
        pending table's ``condition``)."""

    async def read(self, party: int, instance: str, requests: AsyncIterator[bytes]) -> None:
        """Read one stream of ``party`` (from process ``instance``) until it ends or breaks."""
        reassembler = Reassembler(max_bytes=self._max_bytes, chunk_bytes=self._chunk_bytes)
        try:
            async for raw in requests:
                try:
                    chunk = parse_chunk(raw, chunk_bytes=self._chunk_bytes)
                    pending = self._pending.get(chunk.message_id)
                    self._wire.add_received(pending.category if pending else "unmatched", len(raw))
                    done = reassembler.add(chunk)
                except WireError as error:
                    self._reject(party, None, str(error))
                    continue
                if done is not None:
                    self._deliver(party, instance, done.message_id, done.frame)
        except Exception as error:  # the stream broke: the party reconnects or times out
            log.debug("stream of party %d ended: %r", party, error)

    def _deliver(self, party: int, instance: str, message_id: int, frame: bytes) -> None:
        pending = self._pending.get(message_id)
        if pending is None or pending.party != party or pending.done:
            log.debug("dropped a reply of party %d to message %d: none open", party, message_id)
            return
        try:
            reply = self._check(party, pending, frame)
        except WireError as error:
            self._reject(party, pending, str(error))
            return
        with self._pending.condition:
            self.answered_by[party] = instance
            if isinstance(reply, FailureReply):
                failure = RemoteFailure(f"party {party} failed: {reply.error}")
                self._pending.settle(pending, error=failure)
            else:
                pending.reply_bytes = len(frame)
                self._pending.settle(pending, reply=reply)

    def _check(self, party: int, pending: Pending, frame: bytes) -> Message:
        decoded = decode(frame, max_bytes=self._max_bytes)
        if decoded.sender != party:
            raise WireError(f"party {party}'s stream carried a frame from sender {decoded.sender}")
        message = decoded.message
        if isinstance(message, FailureReply):
            return message
        if is_control(message.KIND) != (pending.category == CONTROL):
            raise WireError(
                f"party {party} answered a {type(pending.message).__name__} with a"
                f" {type(message).__name__}, a kind not valid in this phase"
            )
        return check_reply(decoded, party=party, request=pending.message)

    def _reject(self, party: int, pending: Pending | None, reason: str) -> None:
        log.warning("rejected a frame from party %d: %s", party, reason)
        if pending is not None:
            pending.rejected = reason
        else:
            for open_request in self._pending.open_for(party):
                open_request.rejected = reason
