"""Transports move encoded messages between the server and the parties.

The names below load on first use, so that a light module of this package (addresses, retry
policies, TLS settings) can be imported without the wire format and torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vfl.transport.base import Exchange, Handler, PartyEndpoint, Transport
    from vfl.transport.inproc import InProcTransport
    from vfl.transport.ledger import DIRECTIONS, PHASES, Direction, Ledger, Phase

_EXPORTS = {
    "DIRECTIONS": "vfl.transport.ledger",
    "PHASES": "vfl.transport.ledger",
    "Direction": "vfl.transport.ledger",
    "Exchange": "vfl.transport.base",
    "Handler": "vfl.transport.base",
    "InProcTransport": "vfl.transport.inproc",
    "Ledger": "vfl.transport.ledger",
    "PartyEndpoint": "vfl.transport.base",
    "Phase": "vfl.transport.ledger",
    "Transport": "vfl.transport.base",
}

__all__ = [
    "DIRECTIONS",
    "PHASES",
    "Direction",
    "Exchange",
    "Handler",
    "InProcTransport",
    "Ledger",
    "PartyEndpoint",
    "Phase",
    "Transport",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'vfl.transport' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
