"""The party end of the gRPC transport: dial out, authenticate, answer requests, reconnect.

A party opens one stream to the server and answers every request frame with the reply frame its
handler (usually ``PartyEndpoint.handle_frame``) returns. It keeps its last replies by message id:
a request sent again after a lost reply is answered from that cache, so a gradient is never
applied twice. If the stream breaks, the party dials again with exponential backoff and jitter,
and gives up only after ``give_up_s`` seconds without the server. A refusal of its credentials is
final. The party stops after answering ``Shutdown``.
"""

from __future__ import annotations

import logging
import queue
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from enum import Enum
from typing import Any

import grpc
import numpy as np

from vfl.errors import ProtocolError, WireError
from vfl.transport.chunks import (
    DEFAULT_CHUNK_BYTES,
    Assembled,
    Reassembler,
    iter_frames,
    split_frame,
)
from vfl.transport.link import METHOD, FailureReply, WireCounters, grpc_options
from vfl.transport.retry import RetryPolicy
from vfl.transport.security import (
    METADATA_INSTANCE,
    METADATA_PARTY,
    METADATA_TOKEN,
    PartyTls,
    RefusalCode,
    RefusedError,
)
from vfl.wire import Shutdown, encode
from vfl.wire.frames import DEFAULT_MAX_BYTES, HEADER, peek_kind

log = logging.getLogger(__name__)

FrameHandler = Callable[[bytes], bytes]
"""Request frame in, reply frame out (``PartyEndpoint.handle_frame``)."""

REPLY_CACHE_SIZE = 8
_REFUSALS: dict[Any, RefusalCode] = {
    grpc.StatusCode.UNAUTHENTICATED: "unauthenticated",
    grpc.StatusCode.PERMISSION_DENIED: "permission_denied",
}


class _Outcome(Enum):
    STOPPED = "stopped"  # answered Shutdown, or stop() was called
    LOST = "lost"  # the stream broke after it was accepted
    UNREACHABLE = "unreachable"  # no stream was accepted this time


class PartyLink:
    """Serves one party's requests over a stream it opens to the server.

    Args:
        party_id: This party's id.
        handler: Answers one request frame with one reply frame.
        address: The server's ``host:port``.
        tls: The CA to trust and, for mutual TLS, this party's certificate.
        token: The party's token ("" if it authenticates by certificate only).
        policy: Backoff between connection attempts (its ``attempts`` and ``timeout_s`` are
            not used here).
        give_up_s: Seconds without the server after which ``serve`` raises.
        max_bytes: Largest frame accepted.
        chunk_bytes: Frame bytes per chunk.
        keepalive_s: Interval of keepalive pings on an idle stream.
        rng: Source of the backoff jitter (fresh entropy by default).
    """

    def __init__(
        self,
        party_id: int,
        handler: FrameHandler,
        *,
        address: str,
        tls: PartyTls,
        token: str = "",
        policy: RetryPolicy | None = None,
        give_up_s: float = 600.0,
        max_bytes: int = DEFAULT_MAX_BYTES,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        keepalive_s: float = 20.0,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.party_id = party_id
        self.handler = handler
        self.address = address
        self.tls = tls
        self.policy = policy if policy is not None else RetryPolicy(backoff_s=0.2, max_backoff_s=5)
        self.give_up_s = give_up_s
        self.instance = secrets.token_hex(8)
        self.wire = WireCounters()
        self._token = token
        self._max_bytes = max_bytes
        self._chunk_bytes = chunk_bytes
        self._keepalive_s = keepalive_s
        self._rng = rng if rng is not None else np.random.default_rng()
        self._replies: OrderedDict[int, list[bytes]] = OrderedDict()
        self._stopping = threading.Event()
        self._call: grpc.Call | None = None

    def serve(self) -> None:
        """Answer requests until ``Shutdown`` (or ``stop``), reconnecting as needed.

        Raises:
            RefusedError: if the server refuses this party's credentials.
            ProtocolError: if the server stays unreachable for ``give_up_s`` seconds.
        """
        without_server_since = time.monotonic()
        retry = 0
        while True:
            outcome = self._session()
            if outcome is _Outcome.STOPPED or self._stopping.is_set():
                return
            if outcome is _Outcome.LOST:
                without_server_since, retry = time.monotonic(), 0
            waited = time.monotonic() - without_server_since
            if waited > self.give_up_s:
                raise ProtocolError(
                    f"party {self.party_id} could not reach the server at {self.address} for"
                    f" {waited:.0f} s; giving up (restart it with --resume once the server runs)"
                )
            retry += 1
            self._stopping.wait(self.policy.delay(retry, rng=self._rng))

    def stop(self) -> None:
        """Close the stream and make ``serve`` return (from another thread)."""
        self._stopping.set()
        call = self._call
        if call is not None:
            call.cancel()

    def reconnect(self) -> None:
        """Drop the current stream (from any thread); ``serve`` dials again at once.

        Open requests are then sent again by the server and answered from the reply cache.
        """
        call = self._call
        if call is not None:
            call.cancel()

    def _session(self) -> _Outcome:
        outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        options = grpc_options(chunk_bytes=self._chunk_bytes, keepalive_s=self._keepalive_s)
        channel = grpc.secure_channel(
            self.address, self.tls.credentials(), options=[*options, *self.tls.options()]
        )
        accepted = False
        try:
            call = channel.stream_stream(METHOD)(iter(outbox.get, None), metadata=self._metadata())
            self._call = call
            if self._stopping.is_set():
                call.cancel()
            accepted = any(key == "vfl-accepted" for key, _ in call.initial_metadata() or ())
            if accepted:
                log.info("party %d connected to %s", self.party_id, self.address)
            return self._answer_all(call, outbox)
        except grpc.RpcError as error:
            return self._ended(error, accepted)
        finally:
            outbox.put(None)
            self._call = None
            channel.close()

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        pairs = [(METADATA_PARTY, str(self.party_id)), (METADATA_INSTANCE, self.instance)]
        if self._token:
            pairs.append((METADATA_TOKEN, self._token))
        return tuple(pairs)

    def _answer_all(
        self, call: Iterator[bytes], outbox: queue.SimpleQueue[bytes | None]
    ) -> _Outcome:
        reassembler = Reassembler(max_bytes=self._max_bytes, chunk_bytes=self._chunk_bytes)
        for item in iter_frames(self._counted(call), reassembler):
            if isinstance(item, WireError):
                log.warning("party %d rejected a frame from the server: %s", self.party_id, item)
                continue
            chunks, stop = self._answer(item)
            for chunk in chunks:
                self.wire.add_sent("all", len(chunk))
                outbox.put(chunk)
            if stop:
                outbox.put(None)  # half-close; the server then ends the stream
                _drain(call)
                return _Outcome.STOPPED
        return _Outcome.LOST

    def _counted(self, call: Iterator[bytes]) -> Iterator[bytes]:
        for raw in call:
            self.wire.add_received("all", len(raw))
            yield raw

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
        chunks = split_frame(item.message_id, reply, chunk_bytes=self._chunk_bytes)
        self._replies[item.message_id] = chunks
        while len(self._replies) > REPLY_CACHE_SIZE:
            self._replies.popitem(last=False)
        return chunks, stop

    def _ended(self, error: grpc.RpcError, accepted: bool) -> _Outcome:
        if self._stopping.is_set():
            return _Outcome.STOPPED
        code = error.code()
        if code in _REFUSALS:
            raise RefusedError(
                f"the server at {self.address} refused party {self.party_id}: {error.details()}",
                _REFUSALS[code],
            ) from None
        log.warning(
            "party %d: stream to %s %s (%s: %s)",
            self.party_id,
            self.address,
            "broke" if accepted else "could not be opened",
            code.name if code is not None else "?",
            error.details(),
        )
        return _Outcome.LOST if accepted else _Outcome.UNREACHABLE


def _drain(call: Iterator[bytes]) -> None:
    """Read a stream to its end, ignoring how it ends (after Shutdown nothing matters)."""
    try:
        for _ in call:
            pass
    except grpc.RpcError:
        pass


def _round_of(frame: bytes) -> int:
    """The round in a frame's header, or 0 if the frame is too short to hold one."""
    if len(frame) < HEADER.size:
        return 0
    return int(HEADER.unpack_from(frame)[4])
