"""A party's open stream at the server: the queue its requests are written from.

The queue lives on the server's event loop (``vfl.transport.aio_server``); the training thread
hands chunks to it without waiting, one hand-off per exchange (``put_all``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence


class PartyStream:
    """One open stream of a party: where its requests are written.

    Its outbox lives on the server's event loop; ``put`` and ``close`` may be called from any
    thread and hand the chunks to the loop.
    """

    def __init__(self, instance: str, loop: asyncio.AbstractEventLoop) -> None:
        self.instance = instance
        self.outbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._loop = loop

    def put(self, chunks: Sequence[bytes]) -> None:
        """Queue ``chunks`` (from any thread)."""
        self._loop.call_soon_threadsafe(self.put_now, chunks)

    def close(self) -> None:
        """End the stream once the chunks queued before are written (from any thread)."""
        self._loop.call_soon_threadsafe(self.outbox.put_nowait, None)

    def put_now(self, chunks: Sequence[bytes]) -> None:
        """Queue ``chunks`` (on the event loop's thread only)."""
        for chunk in chunks:
            self.outbox.put_nowait(chunk)


def put_all(writes: Sequence[tuple[PartyStream, Sequence[bytes]]]) -> None:
    """Queue every stream's chunks (on the event loop)."""
    for stream, chunks in writes:
        stream.put_now(chunks)
