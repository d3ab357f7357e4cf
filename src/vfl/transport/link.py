"""What both ends of the gRPC link agree on: the method, channel options, wire counters.

Message kinds 60-79 are *control* messages of a deployment (alignment, setup, checkpoints):
they are never recorded in the communication ledger, which holds exactly what the in-process
transport records. Kind 79 is the transport's own ``FailureReply``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from vfl.errors import ProtocolError
from vfl.transport.address import MAX_PORT as MAX_PORT
from vfl.transport.address import split_address as split_address
from vfl.transport.chunks import CHUNK_OVERHEAD_BYTES, GRPC_PREFIX_BYTES
from vfl.transport.proto import vfl_pb2
from vfl.wire.schema import Message, register

_SERVICE = vfl_pb2.DESCRIPTOR.services_by_name["Link"]
SERVICE_NAME = _SERVICE.full_name
METHOD_NAME = _SERVICE.methods_by_name["Connect"].name
METHOD = f"/{SERVICE_NAME}/{METHOD_NAME}"
"""The gRPC method path, taken from the proto's descriptor: ``/vfl.v1.Link/Connect``."""

CONTROL_KINDS = range(60, 80)
"""Kind codes of deployment control messages (never in the ledger)."""

CONTROL = "control"
"""Wire-counter category of control traffic."""


@register(kind=79)
@dataclass(frozen=True)
class FailureReply(Message):
    """Party to server: handling the request failed; ``error`` says why (no traceback)."""

    error: str


def is_control(kind: int) -> bool:
    """Whether a message kind is a deployment control message."""
    return kind in CONTROL_KINDS


def grpc_options(*, chunk_bytes: int, keepalive_s: float) -> list[tuple[str, int]]:
    """Channel and server options: message size limits that fit one chunk, and keepalive.

    Keepalive pings let both ends notice a dead peer (a cable pulled, a host gone) while a
    stream is idle, instead of waiting on it forever.
    """
    limit = chunk_bytes + CHUNK_OVERHEAD_BYTES + 1024
    keepalive_ms = int(keepalive_s * 1000)
    return [
        ("grpc.max_receive_message_length", limit),
        ("grpc.max_send_message_length", limit),
        ("grpc.keepalive_time_ms", keepalive_ms),
        ("grpc.keepalive_timeout_ms", keepalive_ms),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.http2.min_ping_interval_without_data_ms", max(1000, keepalive_ms // 2)),
        ("grpc.so_reuseport", 0),  # no second server may silently share the port
    ]


class WireCounters:
    """Bytes and messages a link end really sent and received, by category.

    A message's wire size is its serialized ``Chunk`` bytes plus gRPC's 5-byte length prefix;
    HTTP/2 and TLS framing below that are not visible to the application (see
    ``docs/deployment.md`` for their size). Categories are the ledger phases (``train``,
    ``eval``, ``setup``) for ledgered traffic, ``control`` for control messages, and
    ``rejected`` for received bytes that were dropped.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sent: dict[str, list[int]] = {}
        self._received: dict[str, list[int]] = {}

    def add_sent(self, category: str, chunk_bytes: int) -> None:
        """Count one chunk sent."""
        self._add(self._sent, category, chunk_bytes)

    def add_received(self, category: str, chunk_bytes: int) -> None:
        """Count one chunk received."""
        self._add(self._received, category, chunk_bytes)

    def _add(self, table: dict[str, list[int]], category: str, chunk_bytes: int) -> None:
        with self._lock:
            row = table.setdefault(category, [0, 0])
            row[0] += chunk_bytes + GRPC_PREFIX_BYTES
            row[1] += 1

    def sent(self, *categories: str) -> int:
        """Bytes sent in ``categories`` (all categories if none given)."""
        return self._total(self._sent, categories)

    def received(self, *categories: str) -> int:
        """Bytes received in ``categories`` (all categories if none given)."""
        return self._total(self._received, categories)

    def _total(self, table: dict[str, list[int]], categories: tuple[str, ...]) -> int:
        with self._lock:
            return sum(
                row[0] for name, row in table.items() if not categories or name in categories
            )

    def snapshot(self) -> dict[str, dict[str, dict[str, int]]]:
        """``{"sent"|"received": {category: {"bytes": n, "chunks": k}}}`` for a JSON file."""
        with self._lock:
            return {
                direction: {
                    name: {"bytes": row[0], "chunks": row[1]} for name, row in sorted(t.items())
                }
                for direction, t in (("sent", self._sent), ("received", self._received))
            }


def add_snapshots(
    earlier: dict[str, dict[str, dict[str, int]]], later: dict[str, dict[str, dict[str, int]]]
) -> dict[str, dict[str, dict[str, int]]]:
    """Two ``WireStats.snapshot`` records summed (a run's processes before and after a resume).

    Example:
        >>> a = {"sent": {"train": {"bytes": 10, "chunks": 1}}, "received": {}}
        >>> b = {"sent": {"train": {"bytes": 5, "chunks": 2}}, "received": {}}
        >>> add_snapshots(a, b)["sent"]
        {'train': {'bytes': 15, 'chunks': 3}}
    """
    total: dict[str, dict[str, dict[str, int]]] = {}
    for direction in ("sent", "received"):
        rows = [earlier.get(direction, {}), later.get(direction, {})]
        names = sorted({name for row in rows for name in row})
        total[direction] = {
            name: {
                field: sum(int(row.get(name, {}).get(field, 0)) for row in rows)
                for field in ("bytes", "chunks")
            }
            for name in names
        }
    return total


class PartyUnavailableError(ProtocolError):
    """A party did not answer in time, or its process was replaced while a request was open."""


class PartyUnresponsiveError(PartyUnavailableError):
    """A party stayed connected but sent no valid reply through every attempt.

    Its process is alive (its stream is open) but stuck or far too slow: rolling the run back
    to a checkpoint would meet the same process again, so the server stops instead.
    """


class PartyRestartedError(PartyUnavailableError):
    """A party reconnected from a new process, which has lost the state the request needed."""


class RemoteFailure(ProtocolError):
    """A party received a request but failed to handle it (its ``FailureReply``)."""
