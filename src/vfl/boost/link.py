"""How the label holder reaches the passive holders: a ``Link`` over any vfl ``Transport``.

``Link.request`` sends one SecureBoost message to each of some holders and returns their replies.
``TransportLink`` puts them on vfl's wire through a ``Transport``: each message becomes a framed
wire message (``vfl.boost.codec``), so the transport's ledger counts the real encoded bytes,
ciphertexts included; a request whose frame exceeds the link's frame limit travels in pieces
(``vfl.boost.pieces``). ``PassiveAnswers`` is the holder's side for any transport (it puts
pieces together again), ``passive_endpoint`` its ``PartyEndpoint``;
``local_link`` wires holders of this process through the in-process transport, which encodes,
counts and decodes every frame exactly as a deployment would.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Protocol

from vfl.boost.codec import from_wire, to_wire
from vfl.boost.messages import Reply, Request
from vfl.boost.pieces import BoostPart, PieceAssembler, part_ack, pieces
from vfl.errors import ProtocolError, WireError
from vfl.transport.base import PartyEndpoint, Transport
from vfl.transport.inproc import InProcTransport
from vfl.transport.ledger import Phase
from vfl.wire import Ack, Message, decode
from vfl.wire.frames import DEFAULT_MAX_BYTES
from vfl.wire.schema import SERVER_ID

SETUP_PHASE: Phase = "setup"
TRAIN_PHASE: Phase = "train"
PREDICT_PHASE: Phase = "eval"


class Link(Protocol):
    """Sends requests to passive holders and returns their replies."""

    def request(self, messages: Mapping[int, Request]) -> dict[int, Reply]:
        """One message to each holder named; their replies, by party."""
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
        max_frame_bytes: The largest frame the holders accept; a larger request travels in
            ``BoostPart`` pieces, one round trip each.
    """

    def __init__(
        self,
        transport: Transport,
        clock: HolderClock | None = None,
        *,
        max_frame_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.transport = transport
        self.phase: Phase = TRAIN_PHASE
        self.clock = clock or HolderClock()
        self.link_seconds = 0.0
        self.max_frame_bytes = max_frame_bytes

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
        queues = self._queues(messages)
        replies: dict[int, Message] = {}
        for step in range(max(len(queue) for queue in queues.values())):
            sending = {p: queue[step] for p, queue in queues.items() if step < len(queue)}
            exchange = self.transport.request(sending, phase=self.phase)
            if exchange.failures:
                self.link_seconds += time.perf_counter() - started
                party, error = min(exchange.failures.items())
                raise ProtocolError(f"party {party} failed: {error}") from error
            for party, message in sending.items():
                replies[party] = exchange.replies[party]
                if message is not queues[party][-1] and not isinstance(replies[party], Ack):
                    raise ProtocolError(f"party {party} answered a piece with {replies[party]!r}")
        self.link_seconds += time.perf_counter() - started
        return {party: _reply(party, replies[party]) for party in sorted(messages)}

    def _queues(self, messages: Mapping[int, Request]) -> dict[int, list[Message]]:
        """Each party's frames: its request, or its pieces (one cut per distinct request)."""
        cut: dict[int, list[Message]] = {}
        queues = {}
        for party, message in messages.items():
            if id(message) not in cut:
                cut[id(message)] = pieces(to_wire(message), self.max_frame_bytes)
            queues[party] = cut[id(message)]
        return queues


class AnsweringHolder(Protocol):
    """A holder that answers SecureBoost requests: a ``PassiveBooster``, or a bundle's rules."""

    party: int

    def handle(self, request: Request) -> Reply:
        """Answer one request."""
        ...

    def request_limit(self) -> int:
        """The most bytes a request to it can legitimately take."""
        ...


class PassiveAnswers:
    """A passive holder's answers to wire messages, with requests in pieces put together.

    Args:
        holder: The holder that answers.
        clock: Adds up the holder's own seconds (in-process runs).
    """

    def __init__(self, holder: AnsweringHolder, clock: HolderClock | None = None) -> None:
        self.holder = holder
        self.clock = clock
        self._assembler = PieceAssembler(holder.party)

    def handle(self, message: Message) -> Message:
        """The wire reply to one wire request (an ``Ack`` to a piece that is not the last)."""
        if isinstance(message, BoostPart):
            frame = self._assembler.add(message, self.holder.request_limit())
            if frame is None:
                return part_ack(message)
            message = _whole(self.holder.party, frame, message.round)
        request = from_wire(message)
        if not isinstance(request, Request):
            raise ProtocolError(
                f"party {self.holder.party} got a {type(request).__name__}, which is a reply"
            )
        started = time.perf_counter()
        reply = self.holder.handle(request)
        if self.clock is not None:
            self.clock.seconds += time.perf_counter() - started
        return to_wire(reply)


def passive_endpoint(holder: AnsweringHolder, clock: HolderClock | None = None) -> PartyEndpoint:
    """The holder's side of any transport: wire message in, its answer's wire message out."""
    return PartyEndpoint(holder.party, PassiveAnswers(holder, clock).handle)


def local_link(holders: Mapping[int, AnsweringHolder]) -> TransportLink:
    """Holders of this process behind the in-process transport (every frame encoded and counted)."""
    clock = HolderClock()
    endpoints = {party: passive_endpoint(holders[party], clock) for party in sorted(holders)}
    return TransportLink(InProcTransport(endpoints), clock)


def _whole(party: int, frame: bytes, round_: int) -> Message:
    """The request that pieces of round ``round_`` carried: the server's, of that round."""
    whole = decode(frame, max_bytes=len(frame))
    inner = whole.message
    if whole.sender != SERVER_ID or inner.round != round_ or isinstance(inner, BoostPart):
        raise WireError(
            f"party {party}: the pieces of round {round_} carry a {type(whole.message).__name__}"
            f" of round {whole.message.round} from sender {whole.sender}"
        )
    return whole.message


def _reply(party: int, message: Message) -> Reply:
    reply = from_wire(message)
    if isinstance(reply, Request):
        raise ProtocolError(f"party {party} answered with a request, {type(reply).__name__}")
    return reply
