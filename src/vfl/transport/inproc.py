"""The in-process transport: every message is encoded to bytes, counted, and decoded again.

Parties run in the server's process and thread, one after another, which simulates parallel
parties exactly for synchronous protocols. Because the same frame format and the same endpoints
are used as over the network, the ledger shows the bytes a deployment would send.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from vfl.errors import ProtocolError
from vfl.transport.base import Exchange, PartyEndpoint, Transport, check_reply
from vfl.transport.ledger import Direction, Ledger, Phase
from vfl.wire import SERVER_ID, Message, decode, encode, kind_name
from vfl.wire.frames import DEFAULT_MAX_BYTES, peek_kind


class InProcTransport(Transport):
    """Delivers encoded frames to in-process party endpoints.

    Args:
        endpoints: The parties, each behind its endpoint.
        ledger: Where message sizes are recorded (a fresh one by default).
        max_bytes: Largest frame either side accepts.
    """

    def __init__(
        self,
        endpoints: Mapping[int, PartyEndpoint],
        *,
        ledger: Ledger | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        super().__init__(ledger=ledger)
        for party, endpoint in endpoints.items():
            if endpoint.party_id != party:
                raise ValueError(f"endpoint for party {endpoint.party_id} registered as {party}")
        self._endpoints = dict(sorted(endpoints.items()))
        self._max_bytes = max_bytes

    @property
    def party_ids(self) -> tuple[int, ...]:
        """The parties this transport reaches, ascending."""
        return tuple(self._endpoints)

    def request(self, messages: Mapping[int, Message], *, phase: Phase = "train") -> Exchange:
        """Deliver each message to its party in turn; see ``Transport.request``.

        The frame format's steps run step by step across the parties (every request encoded, every
        party's decode, every party's handler in turn, every reply encoded, every reply counted,
        decoded and checked), not party by party: the same frames, ledger, replies and failures
        (in party order) as one party after another, but a step then runs warm for all parties
        after the first; an encoding step run just after a party's training step costs several
        times as much (docs/benchmarks.md, "The message path runs cold"). A message for an
        unknown party, or one that cannot be encoded, raises before any party runs.
        """
        endpoints = {party: self._endpoint(party) for party in messages}
        frames = {party: encode(m, sender=SERVER_ID) for party, m in messages.items()}
        for party, frame in frames.items():
            self._record(frame, messages[party].round, phase, "down", party)
        failures: dict[int, BaseException] = {}
        received = _each(frames, lambda p, frame: endpoints[p].decode_request(frame), failures)
        answers = _each(received, lambda p, request: endpoints[p].handler(request), failures)
        reply_frames = _each(answers, lambda p, answer: endpoints[p].encode_reply(answer), failures)
        replies = _each(
            reply_frames, lambda p, reply: self._receive(reply, p, messages[p], phase), failures
        )
        in_order = {party: failures[party] for party in messages if party in failures}
        return Exchange(replies, in_order)

    def _endpoint(self, party: int) -> PartyEndpoint:
        endpoint = self._endpoints.get(party)
        if endpoint is None:
            raise ProtocolError(f"no party {party}; this transport reaches {self.party_ids}")
        return endpoint

    def _receive(self, reply: bytes, party: int, request: Message, phase: Phase) -> Message:
        """Count a party's reply frame, then decode and check it."""
        self._record(reply, request.round, phase, "up", party)
        return check_reply(decode(reply, max_bytes=self._max_bytes), party=party, request=request)

    def _record(
        self, frame: bytes, round_: int, phase: Phase, direction: Direction, party: int
    ) -> None:
        self.ledger.record(
            round=round_,
            phase=phase,
            direction=direction,
            party=party,
            kind=kind_name(peek_kind(frame)),
            nbytes=len(frame),
        )


In = TypeVar("In")
Out = TypeVar("Out")


def _each(
    items: Mapping[int, In],
    step: Callable[[int, In], Out],
    failures: dict[int, BaseException],
) -> dict[int, Out]:
    """``step`` applied to every party's item in order; a party whose step raises is a failure."""
    done: dict[int, Out] = {}
    for party, item in items.items():
        try:
            done[party] = step(party, item)
        except Exception as error:  # failures are reported as data
            failures[party] = error
    return done
