"""The party end of the gRPC transport: dial out, authenticate, answer requests, reconnect.

A party opens one stream to the server and answers every request frame with the reply frame its
handler (usually ``PartyEndpoint.handle_frame``) returns, from a cache for a request sent again
(``vfl.transport.party_answers``). If the stream breaks, or the server is not up yet, the party
dials again with exponential backoff and jitter, logging how long it will keep trying, and gives up
after ``give_up_s`` seconds without the server (an address that accepts the connection and never
answers counts as unreachable, within the same ``give_up_s``). What retrying cannot fix ends
``serve`` at once: a refusal of its credentials, a TLS handshake that fails on the certificates (on
either side), and a server name that does not resolve before the first connection. A refusal because
another process of the same party is connected is retried for a grace period (the other process may
be a dead one the server has not noticed yet), then final. The party stops after answering
``Shutdown``. How a dial ended, and whether to dial again, is ``vfl.transport.party_dial``.

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
from collections.abc import Callable

import grpc
import numpy as np

from vfl.transport.chunks import DEFAULT_CHUNK_BYTES
from vfl.transport.link import METHOD, WireCounters, grpc_options, split_address
from vfl.transport.party_answers import Answering, Call, Ended, FrameHandler, cancelling
from vfl.transport.party_dial import Peer, ended_by, judge, report
from vfl.transport.retry import Attempt, Dialing, RetryPolicy
from vfl.transport.security import (
    METADATA_ACCEPTED,
    METADATA_INSTANCE,
    METADATA_MODEL,
    METADATA_PARTY,
    METADATA_TOKEN,
    PartyTls,
)
from vfl.wire.frames import DEFAULT_MAX_BYTES

log = logging.getLogger(__name__)

__all__ = ["FrameHandler", "PartyLink"]

MIN_ANSWER_WAIT_S = 1.0
"""The shortest time a dial waits for the server's answer (once ``give_up_s`` is nearly up)."""


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
        self.address = address
        self.tls = tls
        self.peer = Peer(party_id, address, self.host, tls)
        self.policy = policy if policy is not None else RetryPolicy(backoff_s=0.2, max_backoff_s=5)
        self.give_up_s = give_up_s
        self.instance = secrets.token_hex(8)
        self.wire = WireCounters()
        self.answering = Answering(
            party_id, handler, self.wire, max_bytes=max_bytes, chunk_bytes=chunk_bytes
        )
        self._token = token
        self._model = model
        self._chunk_bytes = chunk_bytes
        self._keepalive_s = keepalive_s
        self._rng = rng if rng is not None else np.random.default_rng()
        self.duplicate_grace_s = (
            2.5 * keepalive_s if duplicate_grace_s is None else duplicate_grace_s
        )
        self._stopping = threading.Event()
        self._call: Call | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._wake: asyncio.Event | None = None
        self._dropped: Call | None = None

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
                judge(ended, dialing, self.peer)
                left = dialing.left_s(time.monotonic())  # never wait past giving up
                delay = min(self.policy.delay(dialing.retry, rng=self._rng), left + 0.05)
                report(ended, dialing, delay, self.peer)
                with contextlib.suppress(TimeoutError):  # woken early by stop()
                    await asyncio.wait_for(self._wake.wait(), delay)
        finally:
            self._loop = None

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

    def _drop(self, call: Call | None, *, wake: bool) -> None:
        """Cancel ``call`` (the stream current when asked, never a later one); wake the wait."""
        if call is not None:
            self._dropped = call
            call.cancel()
        if wake and self._wake is not None:
            self._wake.set()

    async def _session(self, answer_within_s: float) -> Ended:
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
        call: Call | None = None
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
                return Ended(Attempt.UNREACHABLE, silent)
            accepted = any(key == METADATA_ACCEPTED for key, _ in metadata or ())
            if accepted:
                log.info("party %d connected to %s", self.party_id, self.address)
            return await self.answering.answer_all(call)
        except grpc.RpcError as error:
            return self._ended(error, accepted)
        except asyncio.CancelledError:
            # a read or write of a call that stop() or reconnect() dropped; anything else is
            # this task being cancelled (Ctrl-C under asyncio.run), which must end serve
            if call is None or call is not self._dropped or cancelling():
                raise
            return self._cancelled(accepted)
        except asyncio.InvalidStateError:
            # a write on a call that had already ended: dropped here, or ended by the server
            if call is None or not call.done() or cancelling():
                raise
            if call is self._dropped:
                return self._cancelled(accepted)
            reason = "the server ended the stream while this party wrote its reply"
            return Ended(Attempt.LOST if accepted else Attempt.UNREACHABLE, reason)
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

    def _cancelled(self, accepted: bool) -> Ended:
        """How a session ended that ``stop`` or ``reconnect`` cancelled."""
        if self._stopping.is_set():
            return Ended(None)
        details = "this party dropped the stream to reconnect"
        return Ended(Attempt.LOST if accepted else Attempt.UNREACHABLE, details)

    def _ended(self, error: grpc.RpcError, accepted: bool) -> Ended:
        if self._stopping.is_set():
            return Ended(None)
        return ended_by(error, self.peer, accepted=accepted)
