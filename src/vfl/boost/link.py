"""How the label holder reaches the passive holders: a ``Link``, and the in-memory one.

``Link.request`` sends one message to each of some holders and returns their replies, the shape
of vfl's ``Transport.request``; the deployed transports put the same messages on vfl's wire. The
in-memory link calls each holder's ``handle`` in party order and counts the payload bytes of
every message: ciphertexts at their encoded size, row positions at 8 bytes, masks at 1 byte per
row (the wire will bit-pack ids and masks; ciphertexts, which dominate, do not shrink).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Protocol

import numpy as np

from vfl.boost.messages import Ciphertexts, Reply, Request
from vfl.boost.passive import PassiveBooster
from vfl.errors import ProtocolError


class Link(Protocol):
    """Sends requests to passive holders and returns their replies."""

    def request(self, messages: Mapping[int, Request]) -> dict[int, Reply]:
        """One message to each holder named; their replies, by party."""
        ...


def payload_size(value: object) -> int:
    """Bytes of a message's payload: ciphertexts, arrays and scalars, without framing."""
    if isinstance(value, Ciphertexts):
        return len(value.data)
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, bool):
        return 1
    if isinstance(value, int | float):
        return 8
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, tuple):
        return sum(payload_size(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(payload_size(getattr(value, f.name)) for f in dataclasses.fields(value))
    raise TypeError(f"no payload size for {type(value).__name__}")


class LocalLink:
    """All holders in this process; counts bytes and the holders' time per message type.

    Attributes:
        sent: Payload bytes to the passive holders, by request type.
        received: Payload bytes back, by reply type.
        seconds: Time spent in the holders' ``handle``, by request type.
    """

    def __init__(self, passives: Mapping[int, PassiveBooster]) -> None:
        self.passives = dict(sorted(passives.items()))
        self.sent: Counter[str] = Counter()
        self.received: Counter[str] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)

    @property
    def total_sent(self) -> int:
        """Payload bytes sent so far."""
        return sum(self.sent.values())

    @property
    def total_received(self) -> int:
        """Payload bytes received so far."""
        return sum(self.received.values())

    def request(self, messages: Mapping[int, Request]) -> dict[int, Reply]:
        """Each holder handles its message, in party order."""
        replies: dict[int, Reply] = {}
        for party in sorted(messages):
            if party not in self.passives:
                raise ProtocolError(f"no passive holder {party}; holders: {sorted(self.passives)}")
            message = messages[party]
            kind = type(message).__name__
            self.sent[kind] += payload_size(message)
            started = time.perf_counter()
            reply = self.passives[party].handle(message)
            self.seconds[kind] += time.perf_counter() - started
            self.received[type(reply).__name__] += payload_size(reply)
            replies[party] = reply
        return replies
