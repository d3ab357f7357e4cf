"""The party end of the gRPC transport: dial out, authenticate, answer requests, reconnect.

A party opens one stream to the server and answers every request frame with the reply frame its
handler (usually ``PartyEndpoint.handle_frame``) returns. It keeps its last replies by message id:
a request sent again after a lost reply is answered from that cache, so a gradient is never
applied twice. If the stream breaks, or the server is not up yet, the party dials again with
exponential backoff and jitter, logging how long it will keep trying, and gives up after
``give_up_s`` seconds without the server (an address that accepts the connection and never
answers counts as unreachable, within the same ``give_up_s``). What retrying cannot fix ends
``serve`` at once: a refusal of its credentials, a TLS handshake that fails on the certificates
(on either side), and a server name that does not resolve before the first connection. A
refusal because another process of the same party is connected is retried for a grace period
(the other process may be a dead one the server has not noticed yet), then final. The party
stops after answering ``Shutdown``.

The link runs on gRPC's asyncio API, in the thread that calls ``serve``: it reads a request,
computes the reply with the (synchronous) handler and writes the reply, all in that one thread.
The synchronous API reads on a channel thread and writes from a request-iterator thread, which
costs two thread hand-offs per message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import numpy as np

from vfl.errors import ProtocolError, WireError
from vfl.transport.chunks import (
    DEFAULT_CHUNK_BYTES,
    Assembled,
    Reassembler,
    split_frame,
)
from vfl.transport.link import METHOD, FailureReply, WireCounters, grpc_options, split_address
from vfl.transport.retry import Attempt, Dialing, RetryPolicy
from vfl.transport.security import (
    METADATA_INSTANCE,
    METADATA_MODEL,
    METADATA_PARTY,
    METADATA_TOKEN,
    HandshakeError,
    PartyTls,
    RefusalCode,
    RefusedError,
    handshake_problem,
    rejected_certificate,
)
from vfl.wire import Shutdown, encode
from vfl.wire.frames import DEFAULT_MAX_BYTES, HEADER, peek_kind

log = logging.getLogger(__name__)

FrameHandler = Callable[[bytes], bytes]
"""Request frame in, reply frame out (``PartyEndpoint.handle_frame``)."""

REPLY_CACHE_SIZE = 8
REPORT_EVERY_S = 5.0
MIN_ANSWER_WAIT_S = 1.0
"""The shortest time a dial waits for the server's answer (once ``give_up_s`` is nearly up)."""
"""Least time between two log lines about a server that cannot be reached."""
_REFUSALS: dict[Any, RefusalCode] = {
    grpc.StatusCode.UNAUTHENTICATED: "unauthenticated",
    grpc.StatusCode.PERMISSION_DENIED: "permission_denied",
}
_UNRESOLVED = ("DNS resolution failed", "errors resolving", "hostname lookup error")


@dataclass(frozen=True)
class _Ended:
    """How one connection attempt ended: stopped (``None``) or a failure, and gRPC's details."""

    failure: Attempt | None
    details: str = ""


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
        duplicate_grace_s: How long to keep dialing while the server says another process
            of this party is connected (default: 2.5 keepalive intervals, about the time
            the server takes to notice a dead connection).
        model: The run fingerprint of the party's model bundle, when it predicts; the server
            admits it only if its own model comes from the same run.
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
        duplicate_grace_s: float | None = None,
        model: str = "",
    ) -> None:
        self.host, _ = split_address(address)
        self.party_id = party_id
        self.handler = handler
        self.address = address
        self.tls = tls
        self.policy = policy if policy is not None else RetryPolicy(backoff_s=0.2, max_backoff_s=5)
        self.give_up_s = give_up_s
        self.instance = secrets.token_hex(8)
        self.wire = WireCounters()
        self._token = token
        self._model = model
        self._max_bytes = max_bytes
        self._chunk_bytes = chunk_bytes
        self._keepalive_s = keepalive_s
        self._rng = rng if rng is not None else np.random.default_rng()
        self.duplicate_grace_s = (
            2.5 * keepalive_s if duplicate_grace_s is None else duplicate_grace_s
        )
        self._replies: OrderedDict[int, list[bytes]] = OrderedDict()
        self._stopping = threading.Event()
        self._call: grpc.aio.StreamStreamCall[bytes, bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._wake: asyncio.Event | None = None
        self._dropped: grpc.aio.StreamStreamCall[bytes, bytes] | None = None

    def serve(self) -> None:
        """Answer requests until ``Shutdown`` (or ``stop``), reconnecting as needed.

        Runs its own asyncio event loop in the calling thread, so it cannot be called where a
        loop already runs (from a coroutine, or a notebook's cell): use a thread there.

        Raises:
            RefusedError: if the server refuses this party (credentials, or a second process
                of the same party past the grace period).
            HandshakeError: if the TLS handshake fails on the certificates.
            ProtocolError: if the server's name does not resolve before the first connection,
                or the server stays unreachable for ``give_up_s`` seconds.
        """
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop, self._loop_thread = asyncio.get_running_loop(), threading.get_ident()
        self._wake = asyncio.Event()
        dialing = Dialing(self.give_up_s, self.duplicate_grace_s, since=time.monotonic())
        try:
            while not self._stopping.is_set():
                left = dialing.give_up_s - (time.monotonic() - dialing.since)
                ended = await self._session(max(left, MIN_ANSWER_WAIT_S))
                if ended.failure is None or self._stopping.is_set():
                    return
                self._judge(ended, dialing)
                left = dialing.left_s(time.monotonic())  # never wait past giving up
                delay = min(self.policy.delay(dialing.retry, rng=self._rng), left + 0.05)
                self._report(ended, dialing, delay)
                with contextlib.suppress(TimeoutError):  # woken early by stop()
                    await asyncio.wait_for(self._wake.wait(), delay)
        finally:
            self._loop = None

    def _judge(self, ended: _Ended, dialing: Dialing) -> None:
        """Count a failed attempt; raise once retrying is pointless or ``give_up_s`` passed."""
        assert ended.failure is not None
        now = time.monotonic()
        verdict = dialing.failed(ended.failure, now)
        if verdict == "closed":
            why = rejected_certificate(self.address, self.tls, dialing.closures)
            raise HandshakeError(f"party {self.party_id}: {why}")
        if verdict == "duplicate":
            raise RefusedError(self._refusal(ended.details), "already_connected")
        if verdict == "unresolved":
            raise ProtocolError(
                f"party {self.party_id} cannot resolve the server's name {self.host!r}"
                f" (server address {self.address!r}): {ended.details}"
            )
        if verdict == "give up":
            raise ProtocolError(
                f"party {self.party_id} could not reach the server at {self.address} for"
                f" {now - dialing.since:.0f} s; giving up (restart it with --resume once the"
                " server runs)"
            )

    def _report(self, ended: _Ended, dialing: Dialing, delay: float) -> None:
        """Log why the party is still dialing and how long it will go on (rate-limited)."""
        now = time.monotonic()
        reason = _last_error(ended.details)
        if ended.failure is Attempt.LOST:
            what = f"lost the server at {self.address} ({reason}); dialing again"
        elif now - dialing.reported < REPORT_EVERY_S:
            return
        elif ended.failure is Attempt.DUPLICATE:
            what = f"{self._refusal(ended.details)}; dialing again"
        else:
            what = f"the server at {self.address} is not reachable ({reason})"
        log.warning(
            "party %d: %s; next try in %.1f s, giving up in %.0f s",
            self.party_id,
            what,
            delay,
            dialing.left_s(now),
        )
        dialing.reported = now

    def _refusal(self, details: str) -> str:
        return f"the server at {self.address} refused party {self.party_id}: {details}"

    def stop(self) -> None:
        """Close the stream and make ``serve`` return (from any thread, or the handler)."""
        self._stopping.set()
        call = self._call
        self._on_loop(lambda: self._drop(call, wake=True))

    def reconnect(self) -> None:
        """Drop the current stream (from any thread); ``serve`` dials again at once.

        Open requests are then sent again by the server and answered from the reply cache.
        """
        call = self._call
        self._on_loop(lambda: self._drop(call, wake=False))

    def _on_loop(self, action: Callable[[], None]) -> None:
        """Run ``action`` on the link's event loop: now if called there, else soon."""
        loop = self._loop
        if loop is None:
            return
        if threading.get_ident() == self._loop_thread:
            action()
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: serve returned
            loop.call_soon_threadsafe(action)

    def _drop(self, call: grpc.aio.StreamStreamCall[bytes, bytes] | None, *, wake: bool) -> None:
        """Cancel ``call`` (the stream current when asked, never a later one); wake the wait."""
        if call is not None:
            self._dropped = call
            call.cancel()
        if wake and self._wake is not None:
            self._wake.set()

    async def _session(self, answer_within_s: float) -> _Ended:
        """One stream to the server: answer on it until it ends; why it ended.

        The server must answer the dial (TLS handshake, admission) within ``answer_within_s``
        (what is left of ``give_up_s``): an address that accepts connections and stays silent
        would otherwise hold the attempt for as long as gRPC's own connect timeout.
        """
        options = grpc_options(chunk_bytes=self._chunk_bytes, keepalive_s=self._keepalive_s)
        channel = grpc.aio.secure_channel(
            self.address, self.tls.credentials(), options=[*options, *self.tls.options()]
        )
        accepted = False
        call: grpc.aio.StreamStreamCall[bytes, bytes] | None = None
        try:
            call = channel.stream_stream(METHOD)(metadata=self._metadata())
            self._call = call
            if self._stopping.is_set():
                self._drop(call, wake=False)
            try:
                metadata = await asyncio.wait_for(call.initial_metadata(), answer_within_s)
            except TimeoutError:
                self._drop(call, wake=False)
                silent = f"no answer to the dial within {answer_within_s:.0f} s"
                return _Ended(Attempt.UNREACHABLE, silent)
            accepted = any(key == "vfl-accepted" for key, _ in metadata or ())
            if accepted:
                log.info("party %d connected to %s", self.party_id, self.address)
            return await self._answer_all(call)
        except grpc.RpcError as error:
            return self._ended(error, accepted)
        except asyncio.CancelledError:
            # a read or write of a call that stop() or reconnect() dropped; anything else is
            # this task being cancelled (Ctrl-C under asyncio.run), which must end serve
            if call is None or call is not self._dropped or _cancelling():
                raise
            return self._cancelled(accepted)
        except asyncio.InvalidStateError:
            # a write on a call that had already ended: dropped here, or ended by the server
            if call is None or not call.done() or _cancelling():
                raise
            if call is self._dropped:
                return self._cancelled(accepted)
            reason = "the server ended the stream while this party wrote its reply"
            return _Ended(Attempt.LOST if accepted else Attempt.UNREACHABLE, reason)
        finally:
            self._call = None
            await channel.close()

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        pairs = [(METADATA_PARTY, str(self.party_id)), (METADATA_INSTANCE, self.instance)]
        if self._token:
            pairs.append((METADATA_TOKEN, self._token))
        if self._model:
            pairs.append((METADATA_MODEL, self._model))
        return tuple(pairs)

    async def _answer_all(self, call: grpc.aio.StreamStreamCall[bytes, bytes]) -> _Ended:
        reassembler = Reassembler(max_bytes=self._max_bytes, chunk_bytes=self._chunk_bytes)
        async for raw in _chunks(call):
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
                return _Ended(None)
        return _Ended(Attempt.LOST, "the stream ended")

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

    def _cancelled(self, accepted: bool) -> _Ended:
        """How a session ended that ``stop`` or ``reconnect`` cancelled."""
        if self._stopping.is_set():
            return _Ended(None)
        details = "this party dropped the stream to reconnect"
        return _Ended(Attempt.LOST if accepted else Attempt.UNREACHABLE, details)

    def _ended(self, error: grpc.RpcError, accepted: bool) -> _Ended:
        if self._stopping.is_set():
            return _Ended(None)
        code, details = error.code(), str(error.details() or "")
        if code in _REFUSALS:
            raise RefusedError(self._refusal(details), _REFUSALS[code]) from None
        if code == grpc.StatusCode.ALREADY_EXISTS:
            return _Ended(Attempt.DUPLICATE, details)
        if accepted:
            return _Ended(Attempt.LOST, details)
        problem = handshake_problem(details, self.tls, self.host)
        if problem is not None:
            raise HandshakeError(
                f"party {self.party_id} does not accept the server at {self.address}: {problem}"
            ) from None
        if any(marker in details for marker in _UNRESOLVED):
            return _Ended(Attempt.UNRESOLVED, details)
        if details.endswith("Socket closed"):
            return _Ended(Attempt.CLOSED, details)
        return _Ended(Attempt.UNREACHABLE, details)


def _last_error(details: str) -> str:
    """The last reason in gRPC's error details (``Connection refused``), for log lines."""
    return details.rsplit(": ", 1)[-1] or "no details"


async def _chunks(call: grpc.aio.StreamStreamCall[bytes, bytes]) -> AsyncIterator[bytes]:
    """The raw chunks the server writes, until it ends the stream."""
    while True:
        raw = await call.read()
        if raw is grpc.aio.EOF:
            return
        assert isinstance(raw, bytes)
        yield raw


async def _drain(call: grpc.aio.StreamStreamCall[bytes, bytes]) -> None:
    """Read a stream to its end, ignoring how it ends (after Shutdown nothing matters)."""
    try:
        async for _ in _chunks(call):
            pass
    except grpc.RpcError:
        pass
    except asyncio.CancelledError:
        if _cancelling():
            raise


def _cancelling() -> bool:
    """Whether the running task has been asked to cancel (not just a gRPC call it awaited)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _round_of(frame: bytes) -> int:
    """The round in a frame's header, or 0 if the frame is too short to hold one."""
    if len(frame) < HEADER.size:
        return 0
    return int(HEADER.unpack_from(frame)[4])
