"""The server's open requests: one record per message id, resolved by a reply or a failure.

``unanswered`` and ``absent`` say why a request failed once its waits are used up.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from vfl.errors import WireError
from vfl.transport.link import PartyUnavailableError, PartyUnresponsiveError
from vfl.transport.retry import RetryPolicy
from vfl.wire import Message


@dataclass
class Pending:
    """One request waiting for its reply.

    Attributes:
        message_id: The id its chunks carry; the reply must carry it too.
        party: The addressed party.
        message: The request.
        chunks: The serialized chunks, kept for resending.
        category: ``train``/``eval``/``setup`` (ledgered) or ``control``.
        instance: The party process it must reach; ``None`` for whichever is connected.
        reply: The accepted reply, once it arrived.
        reply_bytes: The reply frame's size.
        error: Why the request failed, once it did.
        rejected: The reason the last frame received for it was rejected.
        waiters: The waits this request is part of (see ``PendingTable.wait``).
    """

    message_id: int
    party: int
    message: Message
    chunks: list[bytes]
    category: str
    instance: str | None
    reply: Message | None = None
    reply_bytes: int = 0
    error: BaseException | None = None
    rejected: str = ""
    waiters: list[_Waiter] = field(default_factory=list)

    @property
    def done(self) -> bool:
        """Whether a reply or a failure settled it."""
        return self.reply is not None or self.error is not None


class _Waiter:
    """One ``PendingTable.wait``: how many of its requests are open, and an event for the last."""

    def __init__(self, remaining: int) -> None:
        self.remaining = remaining
        self.event = threading.Event()

    def settled_one(self) -> None:
        self.remaining -= 1
        if self.remaining == 0:
            self.event.set()


class PendingTable:
    """Open requests by message id, guarded by one condition variable.

    Message ids start at a random 40-bit value, so that a party never mistakes a request from
    a restarted server for one it answered before (it caches its last replies by id).
    """

    def __init__(self) -> None:
        self.condition = threading.Condition(threading.RLock())
        self._items: dict[int, Pending] = {}
        self._next_id = secrets.randbits(40)

    def new_id(self) -> int:
        """A fresh message id."""
        with self.condition:
            self._next_id += 1
            return self._next_id

    def add(self, pending: Pending) -> None:
        """Register an open request."""
        with self.condition:
            self._items[pending.message_id] = pending

    def get(self, message_id: int) -> Pending | None:
        """The request with this id, if it is still registered."""
        with self.condition:
            return self._items.get(message_id)

    def open_for(self, party: int) -> list[Pending]:
        """The party's requests that are not settled yet."""
        with self.condition:
            return [p for p in self._items.values() if p.party == party and not p.done]

    def settle(
        self, pending: Pending, *, reply: Message | None = None, error: BaseException | None = None
    ) -> None:
        """Record a request's reply or failure (the first one wins).

        A wait is woken only when the last of its requests settles: one thread switch per
        exchange instead of one per party.
        """
        with self.condition:
            if pending.done:
                return
            pending.reply, pending.error = reply, error
            for waiter in pending.waiters:
                waiter.settled_one()

    def wait(self, pendings: Iterable[Pending], timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for all of ``pendings`` to settle; whether they did."""
        with self.condition:
            unsettled = [p for p in pendings if not p.done]
            if not unsettled:
                return True
            waiter = _Waiter(len(unsettled))
            for pending in unsettled:
                pending.waiters.append(waiter)
        try:
            return waiter.event.wait(max(timeout, 0.0))
        finally:
            with self.condition:
                for pending in unsettled:
                    pending.waiters.remove(waiter)

    def remove(self, pendings: Iterable[Pending]) -> None:
        """Forget settled requests (a late reply to them is then rejected as unknown)."""
        with self.condition:
            for pending in pendings:
                self._items.pop(pending.message_id, None)


def unanswered(
    pending: Pending, policy: RetryPolicy, away_s: float | None
) -> WireError | PartyUnavailableError:
    """Why ``pending`` failed after every attempt of ``policy`` (``away_s``: its party is away).

    A party that only sent rejected frames, one that is not connected, and one that stayed
    connected and silent (its process stuck) fail differently.
    """
    waited = f"within {policy.max_wait_s:g} s ({policy.attempts} attempts)"
    what = type(pending.message).__name__
    if pending.rejected:
        return WireError(
            f"party {pending.party} sent no valid reply to {what} {waited}; last rejected"
            f" frame: {pending.rejected}"
        )
    if away_s is not None:
        return PartyUnavailableError(
            f"party {pending.party} did not answer {what} {waited}; it is not connected"
        )
    return PartyUnresponsiveError(
        f"party {pending.party} did not answer {what} {waited} although it is connected"
        " (is its process stuck?)"
    )


def absent(pending: Pending, policy: RetryPolicy) -> PartyUnavailableError:
    """Why ``pending`` failed when its party stayed away past ``policy.reconnect_s``."""
    return PartyUnavailableError(
        f"party {pending.party} is disconnected and did not reconnect within"
        f" {policy.reconnect_s:g} s to answer {type(pending.message).__name__}"
    )
