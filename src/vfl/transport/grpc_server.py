"""The server end of the gRPC link: authenticated party streams and checked incoming frames.

The server hosts one gRPC method (``/vfl.v1.Link/Connect``, registered with generic handlers so
that chunks arrive as raw bytes). Each party opens one bidirectional stream and keeps it open;
the server admits it only after ``Authenticator.check`` and then writes requests to it. A
reader per stream rebuilds frames from chunks and checks each one (size before buffering,
structure, sender, kind for the phase, round, and the reply's type, sizes and shapes for its
request, ``Message.check_reply``) before it settles the open request with the same message id;
a bad frame is logged with its reason and dropped.

The server runs on gRPC's asyncio API in one event-loop thread of its own: every stream's
writer and reader is a task on that loop, so an exchange's requests go from the training thread
to the loop in one hand-off (``call_soon_threadsafe``) and its replies come back in one
(the wait is woken when the last reply settles). The synchronous API needs a pool thread to
write each stream and another to read it, and wakes one of them per message. Services hosted
beside the link (``vfl serve``'s scoring API) keep their synchronous handlers, which gRPC runs
in a thread pool.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from concurrent import futures
from typing import Any, NoReturn, TypeVar

import grpc

from vfl.errors import ConfigError, WireError
from vfl.transport.base import check_reply
from vfl.transport.chunks import Reassembler, parse_chunk
from vfl.transport.link import (
    CONTROL,
    METHOD_NAME,
    SERVICE_NAME,
    FailureReply,
    PartyRestartedError,
    RemoteFailure,
    WireCounters,
    grpc_options,
    is_control,
    split_address,
)
from vfl.transport.pending import Pending, PendingTable
from vfl.transport.security import Authenticator, RefusedError, ServerTls
from vfl.wire import Message, decode

log = logging.getLogger(__name__)

T = TypeVar("T")
STOP_GRACE_S = 1.0
"""How long ``close`` lets calls in flight finish before cancelling them."""
CLOSE_TIMEOUT_S = 10.0
"""How long ``close`` waits for the server and its event loop to stop beyond the grace."""

_STATUS = {
    "unauthenticated": grpc.StatusCode.UNAUTHENTICATED,
    "permission_denied": grpc.StatusCode.PERMISSION_DENIED,
    "already_connected": grpc.StatusCode.ALREADY_EXISTS,
}


class _Stream:
    """One open stream of a party: where its requests are written.

    Its outbox lives on the server's event loop; ``put`` and ``close`` may be called from any
    thread and hand the chunks to the loop.
    """

    def __init__(self, instance: str, loop: asyncio.AbstractEventLoop) -> None:
        self.instance = instance
        self.outbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._loop = loop

    def put(self, chunks: Sequence[bytes]) -> None:
        self._loop.call_soon_threadsafe(self.put_now, chunks)

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self.outbox.put_nowait, None)

    def put_now(self, chunks: Sequence[bytes]) -> None:
        """Queue ``chunks`` (on the event loop's thread only)."""
        for chunk in chunks:
            self.outbox.put_nowait(chunk)


def _put_all(writes: Sequence[tuple[_Stream, Sequence[bytes]]]) -> None:
    """Queue every stream's chunks (on the event loop)."""
    for stream, chunks in writes:
        stream.put_now(chunks)


class PartyStreams:
    """The gRPC server and the open stream of every connected party.

    Args:
        auth: Decides which party a connection belongs to.
        pending: The open requests, settled by the replies read here.
        wire: Counts the bytes read and written.
        tls: The server's TLS material.
        listen: ``host:port`` to listen on (port 0: a free port, see ``port``).
        max_bytes: Largest frame accepted.
        chunk_bytes: Frame bytes per chunk.
        keepalive_s: Keepalive ping interval on idle streams.
        services: More gRPC services the same server hosts on the same port and TLS (the
            online scoring API of ``vfl serve``), with the worker threads they need.
    """

    def __init__(
        self,
        auth: Authenticator,
        pending: PendingTable,
        wire: WireCounters,
        *,
        tls: ServerTls,
        listen: str,
        max_bytes: int,
        chunk_bytes: int,
        keepalive_s: float,
        services: Sequence[grpc.GenericRpcHandler] = (),
        service_workers: int = 0,
    ) -> None:
        self._auth = auth
        self._services = tuple(services)
        self._service_workers = service_workers
        self._party_ids = tuple(sorted(auth.credentials))
        self._pending = pending
        self._wire = wire
        self._max_bytes = max_bytes
        self._chunk_bytes = chunk_bytes
        self._streams: dict[int, _Stream] = {}
        self._pinned: dict[int, str] = {}
        self._answered_by: dict[int, str] = {}
        self._away_since: dict[int, float] = {}
        self._refusals: dict[int, str] = {}
        self._created = time.monotonic()
        self._close_lock = threading.Lock()
        split_address(listen, listen=True)  # grpc would silently wrap a port out of range
        self._pool = futures.ThreadPoolExecutor(
            max_workers=max(1, self._service_workers), thread_name_prefix="vfl-grpc"
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="vfl-grpc-loop", daemon=True
        )
        self._thread.start()
        try:
            self._server, self.port = self._on_loop(self._start(listen, tls, keepalive_s))
        except BaseException:
            self._stop_loop()
            raise

    async def _start(
        self, listen: str, tls: ServerTls, keepalive_s: float
    ) -> tuple[grpc.aio.Server, int]:
        handler = grpc.method_handlers_generic_handler(
            SERVICE_NAME, {METHOD_NAME: grpc.stream_stream_rpc_method_handler(self._serve)}
        )
        server = grpc.aio.server(
            self._pool,
            handlers=(handler, *self._services),
            options=grpc_options(chunk_bytes=self._chunk_bytes, keepalive_s=keepalive_s),
            maximum_concurrent_rpcs=2 * len(self._party_ids) + 4 + self._service_workers,
        )
        try:
            port = int(server.add_secure_port(listen, tls.credentials()))
        except RuntimeError as error:
            raise ConfigError(f"cannot listen on {listen!r}: {error}") from None
        if port == 0:
            raise ConfigError(
                f"cannot listen on {listen!r}: the address is in use, or not one of this host's"
            )
        await server.start()
        log.info("listening on %s (port %d)", listen, port)
        return server, port

    def _on_loop(self, work: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``work`` on the server's event loop and wait for its result (from another thread).

        Raises:
            TimeoutError: if it took longer than ``timeout`` seconds (then it is cancelled).
        """
        future = asyncio.run_coroutine_threadsafe(work, self._loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def wait_for_parties(self, timeout: float, parties: Sequence[int] | None = None) -> list[int]:
        """Wait up to ``timeout`` until every party (or each of ``parties``) has an open stream.

        Returns:
            The parties still missing (empty once all are connected).
        """
        wanted = set(self._party_ids if parties is None else parties)
        condition = self._pending.condition
        with condition:
            condition.wait_for(lambda: wanted <= set(self._streams), timeout)
            return sorted(wanted - set(self._streams))

    def connected(self) -> dict[int, str]:
        """The process instance of every party with an open stream."""
        with self._pending.condition:
            return {party: stream.instance for party, stream in self._streams.items()}

    def answered_by(self, party: int) -> str:
        """The process instance that sent ``party``'s last accepted reply ("" if none)."""
        with self._pending.condition:
            return self._answered_by.get(party, "")

    def pin(self, instances: Mapping[int, str]) -> None:
        """From now on, requests to these parties must reach these process instances.

        A party that reconnects from another process (restarted, so without the state it was
        set up with) then fails its open and future requests with ``PartyRestartedError``
        instead of being sent them.
        """
        with self._pending.condition:
            self._pinned.update(instances)

    def unpin(self) -> None:
        """Requests reach whichever process of each party is connected (before a setup)."""
        with self._pending.condition:
            self._pinned.clear()

    async def _serve(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> None:
        """One party's stream: admit it, then write its requests while a task reads replies."""
        party, stream = await self._admit(context)
        reader = asyncio.create_task(self._read(party, stream, requests))
        try:
            while True:
                chunk = await stream.outbox.get()
                if chunk is None:
                    return
                await context.write(chunk)
        finally:
            reader.cancel()
            self._detach(party, stream)

    async def _admit(self, context: grpc.aio.ServicerContext[bytes, bytes]) -> tuple[int, _Stream]:
        metadata = {str(k): str(v) for k, v in context.invocation_metadata()}
        auth = context.auth_context()
        names = [
            value.decode(errors="replace")
            for key in ("x509_common_name", "x509_subject_alternative_name")
            for value in auth.get(key, [])
        ]
        try:
            party, instance = self._auth.check(metadata, names)
        except RefusedError as error:
            await self._refuse(context, error)
        try:
            self._auth.check_model(party, metadata)
            stream = self._attach(party, instance)
        except RefusedError as error:
            with self._pending.condition:
                self._refusals[party] = str(error)
            await self._refuse(context, error)
        try:
            await context.send_initial_metadata((("vfl-accepted", "1"),))
        except BaseException:
            self._detach(party, stream)
            raise
        return party, stream

    async def _refuse(
        self, context: grpc.aio.ServicerContext[bytes, bytes], error: RefusedError
    ) -> NoReturn:
        log.warning("refused a connection from %s: %s", context.peer(), error)
        await context.abort(_STATUS[error.code], str(error))
        raise error  # abort raised already; this keeps the control flow explicit

    def refusal(self, party: int) -> str:
        """Why the server last refused ``party`` after it authenticated ("" if never)."""
        with self._pending.condition:
            return self._refusals.get(party, "")

    def _attach(self, party: int, instance: str) -> _Stream:
        """Make ``instance`` the open stream of ``party``, resending its open requests.

        Raises:
            RefusedError: if another process of the party has an open stream.
        """
        stream = _Stream(instance, self._loop)
        with self._pending.condition:
            old = self._streams.get(party)
            if old is not None and old.instance != instance:
                raise RefusedError(
                    f"party {party} is already connected from another process; a second"
                    f" process with party id {party} is refused (stop one of them)",
                    "already_connected",
                )
            self._streams[party] = stream
            self._away_since.pop(party, None)
            self._refusals.pop(party, None)
            self._pending.condition.notify_all()
            for pending in self._pending.open_for(party):
                if pending.instance is not None and pending.instance != instance:
                    self._pending.settle(pending, error=_restarted(party))
                else:
                    stream.put(pending.chunks)
        if old is not None:
            old.close()
        how = "reconnected" if old is not None else "connected"
        log.info("party %d %s (process %s)", party, how, instance)
        return stream

    def _detach(self, party: int, stream: _Stream) -> None:
        """Forget ``stream`` if it is still the party's open stream."""
        with self._pending.condition:
            if self._streams.get(party) is stream:
                del self._streams[party]
                self._away_since[party] = time.monotonic()
                log.info("party %d disconnected", party)
        stream.close()

    async def _read(self, party: int, stream: _Stream, requests: AsyncIterator[bytes]) -> None:
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
                    self._deliver(party, stream, done.message_id, done.frame)
        except Exception as error:  # the stream broke: the party reconnects or times out
            log.debug("stream of party %d ended: %r", party, error)
        finally:
            self._detach(party, stream)

    def _deliver(self, party: int, stream: _Stream, message_id: int, frame: bytes) -> None:
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
            self._answered_by[party] = stream.instance
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

    def pinned(self, party: int) -> str | None:
        """The process instance requests to ``party`` must reach, if pinned."""
        return self._pinned.get(party)

    def away_for(self, party: int) -> float | None:
        """Seconds since ``party``'s stream broke (or since start); ``None`` if connected."""
        if party in self._streams:
            return None
        return time.monotonic() - self._away_since.get(party, self._created)

    def ever_connected(self, party: int) -> bool:
        """Whether ``party`` has had an open stream since the server started."""
        return party in self._streams or party in self._away_since

    def transmit(self, pendings: Sequence[Pending]) -> None:
        """Write requests to their parties' streams, those that are open (the others wait).

        All of them reach the event loop in one hand-off. Call with the pending table's
        ``condition`` held.
        """
        writes: list[tuple[_Stream, Sequence[bytes]]] = []
        for pending in pendings:
            stream = self._streams.get(pending.party)
            if stream is None:
                continue
            if pending.instance is not None and stream.instance != pending.instance:
                self._pending.settle(pending, error=_restarted(pending.party))
                continue
            for chunk in pending.chunks:
                self._wire.add_sent(pending.category, len(chunk))
            writes.append((stream, pending.chunks))
        if writes:
            self._loop.call_soon_threadsafe(_put_all, writes)

    def close(self) -> None:
        """End every stream, stop serving and end the event-loop thread (again: a no-op)."""
        with self._close_lock:
            if self._loop.is_closed():
                return
            with self._pending.condition:
                streams = list(self._streams.values())
                self._streams.clear()
            for stream in streams:
                stream.close()
            try:
                self._on_loop(self._stop(), timeout=STOP_GRACE_S + CLOSE_TIMEOUT_S)
            except TimeoutError:
                log.warning("the gRPC server did not stop within %.0f s", CLOSE_TIMEOUT_S)
            finally:
                self._stop_loop()

    async def _stop(self) -> None:
        await self._server.stop(grace=STOP_GRACE_S)
        current = asyncio.current_task()
        left = [task for task in asyncio.all_tasks() if task is not current]
        for task in left:
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)

    def _stop_loop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(CLOSE_TIMEOUT_S)
        if self._thread.is_alive():
            log.warning("the gRPC event loop did not stop within %.0f s", CLOSE_TIMEOUT_S)
        else:
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()
        self._pool.shutdown(wait=False, cancel_futures=True)


def _restarted(party: int) -> PartyRestartedError:
    return PartyRestartedError(
        f"party {party} reconnected from a new process, which lost the state of the run"
    )
