"""How a deployed party process answers a request: its own control handlers first, then its role."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from vfl.errors import ProtocolError
from vfl.roles.party import Party
from vfl.wire import Ack, Message, Shutdown


def answer(
    message: Message,
    handlers: Mapping[type[Message], Callable[[Any], Message]],
    party: Party | None,
    party_id: int,
) -> Message:
    """Answer ``message`` by its control handler, else by the built role ``party``.

    Before the role is built only control messages and a shutdown are answered.

    Raises:
        ProtocolError: for a training message before the party was set up.
    """
    handler = handlers.get(type(message))
    if handler is not None:
        return handler(message)
    if party is None:
        if isinstance(message, Shutdown):
            return Ack(round=message.round)
        raise ProtocolError(
            f"party {party_id} has not been set up; it cannot handle {type(message).__name__}"
        )
    return party.handle(message)
