"""The server end of the gRPC link: authenticated party streams and checked incoming frames.

The server hosts one gRPC method (``/vfl.v1.Link/Connect``, registered with generic handlers so
that chunks arrive as raw bytes). Each party opens one bidirectional stream and keeps it open;
the server admits it only after ``Authenticator.check`` and then writes requests to it. A
reader per stream (``vfl.transport.server_reader``) rebuilds frames from chunks and checks each
one before it settles the open request with the same message id; a bad frame is logged with its
reason and dropped.

The server runs on gRPC's asyncio API in one event-loop thread of its own
(``vfl.transport.aio_server``): every stream's
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
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import NoReturn

import grpc

from vfl.transport.aio_server import AioServer
from vfl.transport.link import (
    METHOD_NAME,
    SERVICE_NAME,
    PartyRestartedError,
    WireCounters,
    split_address,
)
from vfl.transport.party_stream import PartyStream, put_all
from vfl.transport.pending import Pending, PendingTable
from vfl.transport.security import METADATA_ACCEPTED, Authenticator, RefusedError, ServerTls
from vfl.transport.server_reader import ReplyReader

log = logging.getLogger(__name__)

_STATUS = {
    "unauthenticated": grpc.StatusCode.UNAUTHENTICATED,
    "permission_denied": grpc.StatusCode.PERMISSION_DENIED,
    "already_connected": grpc.StatusCode.ALREADY_EXISTS,
}


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
        self._party_ids = tuple(sorted(auth.credentials))
        self._pending = pending
        self._wire = wire
        self._reader = ReplyReader(pending, wire, max_bytes=max_bytes, chunk_bytes=chunk_bytes)
        self._streams: dict[int, PartyStream] = {}
        self._pinned: dict[int, str] = {}
        self._away_since: dict[int, float] = {}
        self._refusals: dict[int, str] = {}
        self._created = time.monotonic()
        self._close_lock = threading.Lock()
        split_address(listen, listen=True)  # grpc would silently wrap a port out of range
        handler = grpc.method_handlers_generic_handler(
            SERVICE_NAME, {METHOD_NAME: grpc.stream_stream_rpc_method_handler(self._serve)}
        )
        self._server = AioServer(
            (handler, *services),
            tls=tls,
            listen=listen,
            chunk_bytes=chunk_bytes,
            keepalive_s=keepalive_s,
            max_calls=2 * len(self._party_ids) + 4 + service_workers,
            workers=service_workers,
        )
        self.port = self._server.port

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
            return self._reader.answered_by.get(party, "")

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

    async def _admit(
        self, context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> tuple[int, PartyStream]:
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
            await context.send_initial_metadata(((METADATA_ACCEPTED, "1"),))
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

    def _attach(self, party: int, instance: str) -> PartyStream:
        """Make ``instance`` the open stream of ``party``, resending its open requests.

        Raises:
            RefusedError: if another process of the party has an open stream.
        """
        stream = PartyStream(instance, self._server.loop)
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

    def _detach(self, party: int, stream: PartyStream) -> None:
        """Forget ``stream`` if it is still the party's open stream."""
        with self._pending.condition:
            if self._streams.get(party) is stream:
                del self._streams[party]
                self._away_since[party] = time.monotonic()
                log.info("party %d disconnected", party)
        stream.close()

    async def _read(self, party: int, stream: PartyStream, requests: AsyncIterator[bytes]) -> None:
        try:
            await self._reader.read(party, stream.instance, requests)
        finally:
            self._detach(party, stream)

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
        writes: list[tuple[PartyStream, Sequence[bytes]]] = []
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
            self._server.call_soon(put_all, writes)

    def close(self) -> None:
        """End every stream, stop serving and end the event-loop thread (again: a no-op)."""
        with self._close_lock:
            if self._server.closed:
                return
            with self._pending.condition:
                streams = list(self._streams.values())
                self._streams.clear()
            for stream in streams:
                stream.close()
            self._server.close()


def _restarted(party: int) -> PartyRestartedError:
    return PartyRestartedError(
        f"party {party} reconnected from a new process, which lost the state of the run"
    )
