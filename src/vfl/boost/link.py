"""How the label holder reaches the passive holders: a ``Link`` over any vfl ``Transport``.

``Link.request`` sends one SecureBoost message to each of some holders and returns their replies.
``TransportLink`` puts them on vfl's wire through a ``Transport``: each message becomes a framed
wire message (``vfl.boost.codec``), so the transport's ledger counts the real encoded bytes,
ciphertexts included. ``passive_endpoint`` is the holder's side for any transport;
``local_link`` wires holders of this process through the in-process transport, which encodes,
counts and decodes every frame exactly as a deployment would.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Protocol

from vfl.boost.codec import from_wire, to_wire
from vfl.boost.messages import Reply, Request
from vfl.errors import ProtocolError
from vfl.transport.base import PartyEndpoint, Transport
from vfl.transport.inproc import InProcTransport
from vfl.transport.ledger import Phase
from vfl.wire import Message

SETUP_PHASE: Phase = "setup"
TRAIN_PHASE: Phase = "train"
PREDICT_PHASE: Phase = "eval"


class Link(Protocol):
    """Sends requests to passive holders and returns their replies."""

    def request(self, messages: Mapping[int, Request]) -> dict[int, Reply]:
        """One message to each holder named; their replies, by party."""
        ...


class Holder(Protocol):
    """A holder's side of the protocol: its party id, and its answer to each request."""

    party: int

    def handle(self, request: Request) -> Reply:
        """Answer one request from the label holder."""
        ...


class HolderClock:
    """Seconds the holders of this process spent answering (their own work, not the wire's)."""

    def __init__(self) -> None:
        self.seconds = 0.0


class TransportLink:
    """A ``Link`` over a vfl ``Transport``.

    Attributes:
        transport: Where the frames go (its ledger counts them).
        phase: The ledger phase of the next requests (``setup``, ``train`` or ``eval``).
        clock: The in-process holders' own seconds (stays 0 when they run elsewhere).
        link_seconds: Seconds of whole requests (holders, encoding, transport, decoding).
    """

    def __init__(self, transport: Transport, clock: HolderClock | None = None) -> None:
        self.transport = transport
        self.phase: Phase = TRAIN_PHASE
        self.clock = clock or HolderClock()
        self.link_seconds = 0.0

    @property
    def transport_seconds(self) -> float:
        """Seconds on the message path: encoding, moving and decoding frames."""
        return self.link_seconds - self.clock.seconds

    def request(self, messages: Mapping[int, Request]) -> dict[int, Reply]:
        """Each message to its holder; a holder that fails raises, naming it."""
        reachable = list(self.transport.party_ids)
        unknown = sorted(set(messages) - set(reachable))
        if unknown:
            raise ProtocolError(f"no passive holder {unknown[0]}; this link reaches {reachable}")
        started = time.perf_counter()
        exchange = self.transport.request(
            {party: to_wire(message) for party, message in messages.items()}, phase=self.phase
        )
        self.link_seconds += time.perf_counter() - started
        if exchange.failures:
            party, error = min(exchange.failures.items())
            raise ProtocolError(f"party {party} failed: {error}") from error
        return {party: _reply(party, exchange.replies[party]) for party in sorted(messages)}


def passive_endpoint(holder: Holder, clock: HolderClock | None = None) -> PartyEndpoint:
    """The holder's side of any transport: wire message in, its answer's wire message out."""

    def handle(message: Message) -> Message:
        request = from_wire(message)
        if not isinstance(request, Request):
            raise ProtocolError(
                f"party {holder.party} got a {type(request).__name__}, which is a reply"
            )
        started = time.perf_counter()
        reply = holder.handle(request)
        if clock is not None:
            clock.seconds += time.perf_counter() - started
        return to_wire(reply)

    return PartyEndpoint(holder.party, handle)


def local_link(holders: Mapping[int, Holder]) -> TransportLink:
    """Holders of this process behind the in-process transport (every frame encoded and counted)."""
    clock = HolderClock()
    endpoints = {party: passive_endpoint(holders[party], clock) for party in sorted(holders)}
    return TransportLink(InProcTransport(endpoints), clock)


def _reply(party: int, message: Message) -> Reply:
    reply = from_wire(message)
    if isinstance(reply, Request):
        raise ProtocolError(f"party {party} answered with a request, {type(reply).__name__}")
    return reply
