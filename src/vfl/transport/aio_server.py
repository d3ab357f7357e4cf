"""A ``grpc.aio`` server on an asyncio event loop of its own thread.

The server end of the link (``vfl.transport.grpc_server``) runs every stream's writer and reader
as a task on this loop; the training thread hands work to it (``call_soon``, ``on_loop``) and
never blocks it. Services hosted beside the link keep their synchronous handlers, which gRPC
runs in this server's thread pool.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine, Sequence
from concurrent import futures
from typing import Any, TypeVar

import grpc

from vfl.errors import ConfigError
from vfl.transport.link import grpc_options
from vfl.transport.security import ServerTls

log = logging.getLogger("vfl.transport.grpc_server")  # log lines name the link end

T = TypeVar("T")
STOP_GRACE_S = 1.0
"""How long ``close`` lets calls in flight finish before cancelling them."""
CLOSE_TIMEOUT_S = 10.0
"""How long ``close`` waits for the server and its event loop to stop beyond the grace."""


class AioServer:
    """Starts a gRPC server on ``listen`` from a new event-loop thread; ``port`` is where it is.

    Args:
        handlers: The gRPC services it hosts.
        tls: The server's TLS material.
        listen: ``host:port`` to listen on (port 0: a free port).
        chunk_bytes: Largest message gRPC accepts, as the chunks of a frame need it.
        keepalive_s: Keepalive ping interval on idle streams.
        max_calls: Most calls served at once.
        workers: Threads of the pool that runs synchronous handlers (at least one).

    Raises:
        ConfigError: if it cannot listen on ``listen``.
    """

    def __init__(
        self,
        handlers: Sequence[grpc.GenericRpcHandler],
        *,
        tls: ServerTls,
        listen: str,
        chunk_bytes: int,
        keepalive_s: float,
        max_calls: int,
        workers: int,
    ) -> None:
        self._pool = futures.ThreadPoolExecutor(
            max_workers=max(1, workers), thread_name_prefix="vfl-grpc"
        )
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="vfl-grpc-loop", daemon=True
        )
        self._thread.start()
        options = grpc_options(chunk_bytes=chunk_bytes, keepalive_s=keepalive_s)
        try:
            self._server, self.port = self.on_loop(
                self._start(handlers, options, listen, tls, max_calls)
            )
        except BaseException:
            self._stop_loop()
            raise

    async def _start(
        self,
        handlers: Sequence[grpc.GenericRpcHandler],
        options: list[tuple[str, int]],
        listen: str,
        tls: ServerTls,
        max_calls: int,
    ) -> tuple[grpc.aio.Server, int]:
        server = grpc.aio.server(
            self._pool,
            handlers=tuple(handlers),
            options=options,
            maximum_concurrent_rpcs=max_calls,
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

    def on_loop(self, work: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``work`` on the event loop and wait for its result (from another thread).

        Raises:
            TimeoutError: if it took longer than ``timeout`` seconds (then it is cancelled).
        """
        future = asyncio.run_coroutine_threadsafe(work, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def call_soon(self, callback: Callable[..., object], *args: object) -> None:
        """Have the event loop call ``callback(*args)`` (from any thread)."""
        self.loop.call_soon_threadsafe(callback, *args)

    @property
    def closed(self) -> bool:
        """Whether ``close`` has run."""
        return self.loop.is_closed()

    def close(self) -> None:
        """Stop serving (calls in flight get ``STOP_GRACE_S``) and end the event-loop thread."""
        try:
            self.on_loop(self._stop(), timeout=STOP_GRACE_S + CLOSE_TIMEOUT_S)
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
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(CLOSE_TIMEOUT_S)
        if self._thread.is_alive():
            log.warning("the gRPC event loop did not stop within %.0f s", CLOSE_TIMEOUT_S)
        else:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
