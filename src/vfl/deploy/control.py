"""Control exchanges between the server and the parties, over any transport.

The gRPC transport has a ``control`` method (traffic outside the ledger). ``LocalControl`` does
the same in one process, through the frame format, so that alignment and setup can be exercised and
simulated without a network.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, TypeVar

from vfl.run.deployment import build_control_transport
from vfl.transport.base import Exchange, PartyEndpoint
from vfl.wire import Message

R = TypeVar("R", bound=Message)


class ControlChannel(Protocol):
    """Carries control messages to parties and returns their replies (failures as data)."""

    @property
    def party_ids(self) -> tuple[int, ...]:
        """The parties reached, ascending."""
        ...

    def control(self, messages: Mapping[int, Message]) -> Exchange:
        """Send ``messages[p]`` to each party ``p``; see ``Transport.request``."""
        ...


def ask(
    channel: ControlChannel, messages: Mapping[int, Message], expected: type[R]
) -> dict[int, R]:
    """Send control messages and return the replies, all of type ``expected``.

    Raises:
        ProtocolError: naming every party that failed.
        WireError: if a party answered with another message type.
    """
    return channel.control(messages).replies_of(expected)


class LocalControl:
    """A control channel to in-process party endpoints (every message encoded and decoded).

    Args:
        endpoints: The parties, each behind its endpoint.
    """

    def __init__(self, endpoints: Mapping[int, PartyEndpoint]) -> None:
        self._transport = build_control_transport(endpoints)

    @property
    def party_ids(self) -> tuple[int, ...]:
        """The parties reached, ascending."""
        return self._transport.party_ids

    def control(self, messages: Mapping[int, Message]) -> Exchange:
        """Deliver each message in turn; see ``Transport.request``."""
        return self._transport.request(messages, phase="setup")
