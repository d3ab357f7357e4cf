"""Transports move encoded messages between the server and the parties."""

from vfl.transport.base import Exchange, Handler, PartyEndpoint, Transport
from vfl.transport.inproc import InProcTransport
from vfl.transport.ledger import DIRECTIONS, PHASES, Direction, Ledger, Phase

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
