"""The in-process transport: every message is encoded to bytes, counted, and decoded again.

Parties run in the server's process and thread, one after another, which simulates parallel
parties exactly for synchronous protocols. Because the same codec and the same endpoints are used
as over the network, the ledger shows the bytes a deployment would send.
"""

from __future__ import annotations

from collections.abc import Mapping

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
        """Deliver each message to its party in turn; see ``Transport.request``."""
        replies: dict[int, Message] = {}
        failures: dict[int, BaseException] = {}
        for party, message in messages.items():
            endpoint = self._endpoints.get(party)
            if endpoint is None:
                raise ProtocolError(f"no party {party}; this transport reaches {self.party_ids}")
            request = encode(message, sender=SERVER_ID)
            self._record(request, message.round, phase, "down", party)
            try:
                reply = endpoint.handle_frame(request)
                self._record(reply, message.round, phase, "up", party)
                frame = decode(reply, max_bytes=self._max_bytes)
                replies[party] = check_reply(frame, party=party, request=message)
            except Exception as error:  # failures are reported as data
                failures[party] = error
        return Exchange(replies, failures)

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
