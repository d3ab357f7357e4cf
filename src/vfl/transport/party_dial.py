"""How a party's dial to the server ended, and whether it dials again.

A failed attempt is classified from gRPC's status and details (refused, another process of the
party connected, the TLS handshake failed, the name did not resolve, the server closed the
socket, unreachable, or the stream was lost after admission); ``judge`` then raises where
retrying cannot help or ``give_up_s`` has passed, and ``report`` logs why the party is still
dialing, at most every ``REPORT_EVERY_S`` seconds.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import grpc

from vfl.errors import ProtocolError
from vfl.transport.party_answers import Ended
from vfl.transport.retry import Attempt, Dialing
from vfl.transport.security import (
    HandshakeError,
    PartyTls,
    RefusalCode,
    RefusedError,
    handshake_problem,
    rejected_certificate,
)

log = logging.getLogger("vfl.transport.grpc_party")  # log lines name the link end

REPORT_EVERY_S = 5.0
"""Least time between two log lines about a server that cannot be reached."""
_REFUSALS: dict[Any, RefusalCode] = {
    grpc.StatusCode.UNAUTHENTICATED: "unauthenticated",
    grpc.StatusCode.PERMISSION_DENIED: "permission_denied",
}
_UNRESOLVED = ("DNS resolution failed", "errors resolving", "hostname lookup error")


@dataclass(frozen=True)
class Peer:
    """The party that dials and the server it dials.

    Attributes:
        party_id: This party's id.
        address: The server's ``host:port``.
        host: The server's host.
        tls: The CA to trust and, for mutual TLS, this party's certificate.
    """

    party_id: int
    address: str
    host: str
    tls: PartyTls

    def refusal(self, details: str) -> str:
        """What the party says when the server refused it for ``details``."""
        return f"the server at {self.address} refused party {self.party_id}: {details}"


def ended_by(error: grpc.RpcError, peer: Peer, *, accepted: bool) -> Ended:
    """How an attempt that ``error`` ended went (``accepted``: the server had admitted it).

    Raises:
        RefusedError: if the server refused the party's credentials.
        HandshakeError: if the party does not accept the server's certificate.
    """
    code, details = error.code(), str(error.details() or "")
    if code in _REFUSALS:
        raise RefusedError(peer.refusal(details), _REFUSALS[code]) from None
    if code == grpc.StatusCode.ALREADY_EXISTS:
        return Ended(Attempt.DUPLICATE, details)
    if accepted:
        return Ended(Attempt.LOST, details)
    problem = handshake_problem(details, peer.tls, peer.host)
    if problem is not None:
        raise HandshakeError(
            f"party {peer.party_id} does not accept the server at {peer.address}: {problem}"
        ) from None
    if any(marker in details for marker in _UNRESOLVED):
        return Ended(Attempt.UNRESOLVED, details)
    if details.endswith("Socket closed"):
        return Ended(Attempt.CLOSED, details)
    return Ended(Attempt.UNREACHABLE, details)


def judge(ended: Ended, dialing: Dialing, peer: Peer) -> None:
    """Count a failed attempt; raise once retrying is pointless or ``give_up_s`` passed."""
    assert ended.failure is not None
    now = time.monotonic()
    verdict = dialing.failed(ended.failure, now)
    if verdict == "closed":
        why = rejected_certificate(peer.address, peer.tls, dialing.closures)
        raise HandshakeError(f"party {peer.party_id}: {why}")
    if verdict == "duplicate":
        raise RefusedError(peer.refusal(ended.details), "already_connected")
    if verdict == "unresolved":
        raise ProtocolError(
            f"party {peer.party_id} cannot resolve the server's name {peer.host!r}"
            f" (server address {peer.address!r}): {ended.details}"
        )
    if verdict == "give up":
        raise ProtocolError(
            f"party {peer.party_id} could not reach the server at {peer.address} for"
            f" {now - dialing.since:.0f} s; giving up (restart it with --resume once the"
            " server runs)"
        )


def report(ended: Ended, dialing: Dialing, delay: float, peer: Peer) -> None:
    """Log why the party is still dialing and how long it will go on (rate-limited)."""
    now = time.monotonic()
    reason = last_error(ended.details)
    if ended.failure is Attempt.LOST:
        what = f"lost the server at {peer.address} ({reason}); dialing again"
    elif now - dialing.reported < REPORT_EVERY_S:
        return
    elif ended.failure is Attempt.DUPLICATE:
        what = f"{peer.refusal(ended.details)}; dialing again"
    else:
        what = f"the server at {peer.address} is not reachable ({reason})"
    log.warning(
        "party %d: %s; next try in %.1f s, giving up in %.0f s",
        peer.party_id,
        what,
        delay,
        dialing.left_s(now),
    )
    dialing.reported = now


def last_error(details: str) -> str:
    """The last reason in gRPC's error details (``Connection refused``), for log lines."""
    return details.rsplit(": ", 1)[-1] or "no details"
