"""The network transport: the server hosts a gRPC service, each party dials in over TLS.

Each party (behind its firewall) opens one bidirectional stream and keeps it open
(``vfl.transport.grpc_party``; the server end is ``vfl.transport.grpc_server``). ``request``
encodes each message in the frame format, records it in the ledger exactly as the in-process
transport does, writes its chunks to the party's stream and waits for the reply with the same
message id. A bad frame is logged and dropped and the request keeps waiting. A party that stays
silent past ``policy.timeout_s`` is sent the request again after a backoff with jitter (it
answers a repeated id from its reply cache, so nothing is applied twice); after
``policy.attempts`` attempts, or once its broken stream has stayed away ``policy.reconnect_s``,
it is reported in ``Exchange.failures``, never waited on forever: as ``PartyUnresponsiveError``
if it stayed connected, else as ``PartyUnavailableError``. A party whose stream breaks and comes
back from the same process has its open requests sent again at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

import grpc
import numpy as np

from vfl.errors import ProtocolError
from vfl.transport.base import Exchange, Transport
from vfl.transport.chunks import DEFAULT_CHUNK_BYTES, split_frame
from vfl.transport.grpc_server import PartyStreams
from vfl.transport.ledger import Direction, Ledger, Phase
from vfl.transport.link import (
    CONTROL,
    PartyUnavailableError,
    WireCounters,
)
from vfl.transport.pending import Pending, PendingTable, absent, unanswered
from vfl.transport.retry import RetryPolicy
from vfl.transport.security import Authenticator, PartyCredential, ServerTls
from vfl.wire import SERVER_ID, Message, encode, kind_name
from vfl.wire.frames import DEFAULT_MAX_BYTES

log = logging.getLogger(__name__)

ABSENCE_POLL_S = 0.25
"""How often a wait checks whether a disconnected party has been away too long."""
REPORT_EVERY_S = 10.0
"""How often ``wait_for_parties`` logs the parties it is still waiting for."""


class GrpcTransport(Transport):
    """Serves the parties' streams and carries requests to them.

    Args:
        parties: The parties of the run and what authenticates each.
        tls: The server's certificate and key (and client CA for mutual TLS).
        listen: ``host:port`` to listen on; port 0 picks a free port (see ``port``).
        policy: Per-attempt timeout, attempts, backoff and reconnect grace.
        control_timeout_s: Per-attempt timeout of control exchanges (alignment, setup,
            checkpoints), which can take much longer than a training round; default: the
            policy's.
        ledger: Where message sizes are recorded (a fresh one by default).
        max_bytes: Largest frame accepted.
        chunk_bytes: Frame bytes per chunk.
        keepalive_s: Interval of keepalive pings on idle streams.
        rng: Source of the backoff jitter (fresh entropy by default).
        services: More gRPC services the server hosts on its port (``PartyStreams``).
        service_workers: Worker threads those services need.
        model: When the server predicts, its model's run fingerprint: a party is admitted only
            with a bundle of that run (``Authenticator.check_model``).
    """

    def __init__(
        self,
        parties: Mapping[int, PartyCredential],
        *,
        tls: ServerTls,
        listen: str = "127.0.0.1:0",
        policy: RetryPolicy | None = None,
        control_timeout_s: float | None = None,
        ledger: Ledger | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        keepalive_s: float = 20.0,
        rng: np.random.Generator | None = None,
        model: str = "",
        services: Sequence[grpc.GenericRpcHandler] = (),
        service_workers: int = 0,
    ) -> None:
        super().__init__(ledger=ledger)
        self.policy = policy if policy is not None else RetryPolicy()
        self.control_policy = replace(
            self.policy, timeout_s=control_timeout_s or self.policy.timeout_s
        )
        self.wire = WireCounters()
        self._party_ids = tuple(sorted(parties))
        self._chunk_bytes = chunk_bytes
        self._rng = rng if rng is not None else np.random.default_rng()
        self._pending = PendingTable()
        self.streams = PartyStreams(
            Authenticator(parties, mutual=tls.mutual, model=model),
            self._pending,
            self.wire,
            tls=tls,
            listen=listen,
            max_bytes=max_bytes,
            chunk_bytes=chunk_bytes,
            keepalive_s=keepalive_s,
            services=services,
            service_workers=service_workers,
        )
        self.port = self.streams.port

    @property
    def party_ids(self) -> tuple[int, ...]:
        """The parties of the run, ascending (connected or not)."""
        return self._party_ids

    def request(self, messages: Mapping[int, Message], *, phase: Phase = "train") -> Exchange:
        """Send each message to its party and collect replies; see ``Transport.request``."""
        return self._exchange(messages, phase)

    def control(self, messages: Mapping[int, Message]) -> Exchange:
        """Like ``request``, for deployment control messages: counted on the wire, not ledgered."""
        return self._exchange(messages, None)

    def close(self) -> None:
        """End every stream and stop serving."""
        self.streams.close()

    def wait_for_parties(
        self,
        timeout: float,
        parties: Sequence[int] | None = None,
        *,
        report_every_s: float = REPORT_EVERY_S,
    ) -> None:
        """Block until every party (or each of ``parties``) has an open stream.

        Every ``report_every_s`` seconds it logs which parties it is waiting for, how long each
        has been away, and when it will give up.

        Raises:
            PartyUnavailableError: naming the parties still missing after ``timeout`` seconds
                and how long each has been away.
        """
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            missing = self.streams.wait_for_parties(min(max(left, 0), report_every_s), parties)
            if not missing:
                return
            if time.monotonic() >= deadline:
                raise PartyUnavailableError(
                    f"parties {missing} did not connect within {timeout:g} s"
                    f" ({self.absences(missing)})"
                )
            log.warning(
                "waiting for parties %s (%s); giving up in %.0f s",
                missing,
                self.absences(missing),
                deadline - time.monotonic(),
            )

    def absences(self, parties: Sequence[int]) -> str:
        """How long each of ``parties`` has been away (``party 2 disconnected 31 s ago``)."""
        words = []
        for party in parties:
            away = self.streams.away_for(party)
            if away is None:
                continue
            if self.streams.ever_connected(party):
                words.append(f"party {party} disconnected {away:.0f} s ago")
            else:
                words.append(f"party {party} never connected, waited {away:.0f} s")
            refusal = self.streams.refusal(party)
            if refusal:
                words[-1] += f", last refused: {refusal}"
        return "; ".join(words) or "all connected"

    def connected(self) -> dict[int, str]:
        """The process instance of every party with an open stream."""
        return self.streams.connected()

    def answered_by(self, party: int) -> str:
        """The process instance that sent ``party``'s last accepted reply ("" if none)."""
        return self.streams.answered_by(party)

    def pin(self, instances: Mapping[int, str]) -> None:
        """Requests to these parties must reach these process instances; see ``PartyStreams``."""
        self.streams.pin(instances)

    def unpin(self) -> None:
        """Requests reach whichever process of each party is connected (before a setup)."""
        self.streams.unpin()

    def _exchange(self, messages: Mapping[int, Message], phase: Phase | None) -> Exchange:
        for party in messages:
            if party not in self._party_ids:
                raise ProtocolError(f"no party {party}; this transport reaches {self._party_ids}")
        # Every request is encoded before any is counted or sent: one that cannot be encoded
        # stops the exchange before a party hears of it.
        frames = {party: encode(message, sender=SERVER_ID) for party, message in messages.items()}
        with self._pending.condition:  # pins change only under it
            pendings = [
                self._pending_for(party, messages[party], frame, phase)
                for party, frame in frames.items()
            ]
            for pending in pendings:
                self._pending.add(pending)
            self.streams.transmit(pendings)
        try:
            self._await(pendings, self.control_policy if phase is None else self.policy)
        finally:
            self._pending.remove(pendings)
        replies: dict[int, Message] = {}
        failures: dict[int, BaseException] = {}
        for pending in pendings:
            if pending.reply is not None:
                replies[pending.party] = pending.reply
                if phase is not None:
                    self._record(pending.reply, pending.reply_bytes, phase, "up", pending.party)
            else:
                assert pending.error is not None
                failures[pending.party] = pending.error
        return Exchange(replies, failures)

    def _pending_for(
        self, party: int, message: Message, frame: bytes, phase: Phase | None
    ) -> Pending:
        """The open request of ``message`` (encoded as ``frame``) to ``party``, counted."""
        if phase is not None:
            self._record(message, len(frame), phase, "down", party)
        message_id = self._pending.new_id()
        chunks = split_frame(message_id, frame, chunk_bytes=self._chunk_bytes)
        category = CONTROL if phase is None else phase
        return Pending(message_id, party, message, chunks, category, self.streams.pinned(party))

    def _await(self, pendings: list[Pending], policy: RetryPolicy) -> None:
        for attempt in range(1, policy.attempts + 1):
            if self._wait(pendings, policy.timeout_s, policy):
                return
            if attempt == policy.attempts:
                break
            self._pending.wait(pendings, policy.delay(attempt, rng=self._rng))
            with self._pending.condition:
                again = [p for p in pendings if not p.done]
                for pending in again:
                    log.info(
                        "no reply from party %d; sending %s again (attempt %d of %d)",
                        pending.party,
                        type(pending.message).__name__,
                        attempt + 1,
                        policy.attempts,
                    )
                self.streams.transmit(again)
        for pending in pendings:
            self._pending.settle(
                pending, error=unanswered(pending, policy, self.streams.away_for(pending.party))
            )

    def _wait(self, pendings: list[Pending], timeout: float, policy: RetryPolicy) -> bool:
        """Wait up to ``timeout`` for all to settle, failing early a party that stays away."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if self._pending.wait(pendings, min(remaining, ABSENCE_POLL_S)):
                return True
            with self._pending.condition:
                for pending in pendings:
                    away = self.streams.away_for(pending.party)
                    if away is not None and away > policy.reconnect_s:
                        self._pending.settle(pending, error=absent(pending, policy))

    def _record(
        self, message: Message, nbytes: int, phase: Phase, direction: Direction, party: int
    ) -> None:
        self.ledger.record(
            round=message.round,
            phase=phase,
            direction=direction,
            party=party,
            kind=kind_name(message.KIND),
            nbytes=nbytes,
        )
