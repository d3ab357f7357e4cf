"""The transport interface: the server sends typed messages to parties and gets replies.

The server is the orchestrator. ``request`` encodes each message in the frame format, delivers the
bytes, and decodes each party's reply; failures come back as data (Flower's ``failures``), never
as a half-finished exchange. Parties sit behind a ``PartyEndpoint``, which is the same object for
every transport.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from vfl.errors import ProtocolError, WireError
from vfl.transport.ledger import Ledger, Phase
from vfl.wire import SERVER_ID, Frame, Message, decode, encode
from vfl.wire.frames import DEFAULT_MAX_BYTES

Handler = Callable[[Message], Message]
R = TypeVar("R", bound=Message)


@dataclass(frozen=True)
class Exchange:
    """The outcome of one request: replies from parties that answered, failures from the rest."""

    replies: dict[int, Message]
    failures: dict[int, BaseException] = field(default_factory=dict)

    def raise_failures(self) -> None:
        """Raise ``ProtocolError`` naming every failed party, chained to the first failure."""
        if not self.failures:
            return
        details = "; ".join(f"party {p}: {error!r}" for p, error in sorted(self.failures.items()))
        first = next(iter(self.failures.values()))
        raise ProtocolError(f"{len(self.failures)} party(ies) failed: {details}") from first

    def replies_of(self, expected: type[R] | tuple[type[R], ...]) -> dict[int, R]:
        """Every reply, once none failed and each is an ``expected`` type.

        Raises:
            ProtocolError: naming every party that failed.
            WireError: naming a party that answered with another message type.
        """
        self.raise_failures()
        replies: dict[int, R] = {}
        for party, reply in self.replies.items():
            if not isinstance(reply, expected):
                names = (expected,) if isinstance(expected, type) else expected
                valid = " or ".join(t.__name__ for t in names)
                raise WireError(f"party {party} answered {type(reply).__name__}, expected {valid}")
            replies[party] = reply
        return replies


class Transport(ABC):
    """Moves encoded messages between the server and the parties and records them in a ledger."""

    def __init__(self, *, ledger: Ledger | None = None) -> None:
        self.ledger = ledger if ledger is not None else Ledger()

    @property
    @abstractmethod
    def party_ids(self) -> tuple[int, ...]:
        """The parties this transport reaches, ascending."""

    @abstractmethod
    def request(self, messages: Mapping[int, Message], *, phase: Phase = "train") -> Exchange:
        """Send ``messages[p]`` to each party ``p`` and collect the replies.

        Args:
            messages: One message per addressed party.
            phase: Ledger phase of this traffic.

        Returns:
            Replies by party, and failures (exceptions) by party for those that did not answer
            with a valid message.
        """

    def close(self) -> None:  # noqa: B027 - optional hook, most transports hold nothing
        """Release resources; the default holds none."""


class PartyEndpoint:
    """The party side of any transport: decode, check, handle, encode the reply."""

    def __init__(self, party_id: int, handler: Handler, *, max_bytes: int = DEFAULT_MAX_BYTES):
        if party_id == SERVER_ID:
            raise ValueError(f"party id {SERVER_ID} is reserved for the server")
        self.party_id = party_id
        self.handler = handler
        self.max_bytes = max_bytes

    def handle_frame(self, data: bytes) -> bytes:
        """Handle one request frame from the server and return the encoded reply.

        The in-process transport calls its three steps (``decode_request``, ``handler``,
        ``encode_reply``) itself, each for every party in turn; override those, not this.
        """
        return self.encode_reply(self.handler(self.decode_request(data)))

    def decode_request(self, data: bytes) -> Message:
        """The request in a frame from the server (the first step of ``handle_frame``).

        Raises:
            WireError: if the frame is malformed or was not sent by the server.
        """
        frame = decode(data, max_bytes=self.max_bytes)
        if frame.sender != SERVER_ID:
            raise WireError(
                f"party {self.party_id} got a frame from sender {frame.sender};"
                f" only the server ({SERVER_ID}) may send requests"
            )
        return frame.message

    def encode_reply(self, reply: Message) -> bytes:
        """The frame of this party's ``reply`` (the last step of ``handle_frame``)."""
        return encode(reply, sender=self.party_id)


def check_reply(frame: Frame, *, party: int, request: Message) -> Message:
    """The server's check of every reply, whatever the transport.

    The reply must come from the addressed party, answer this round, be of a type the request
    accepts and fit it (``Message.check_reply``).

    Raises:
        WireError: naming what is wrong.
    """
    if frame.sender != party:
        raise WireError(f"reply to party {party}'s request claims sender {frame.sender}")
    if frame.message.round != request.round:
        raise WireError(
            f"party {party} replied for round {frame.message.round} to a round-{request.round}"
            " request (stale or replayed)"
        )
    request.check_reply(frame.message)
    return frame.message
