"""Parties that live in the server's process: the label holder's own feature block.

FedBCD's party K holds the labels *and* a feature block with its own bottom model. Its exchanges
with the label holder never cross a network, so they are neither encoded nor counted: this
transport hands those messages to the local party directly and sends everything else through the
wrapped transport (whose ledger then shows only what really travels, 2(K-1) exchanges per round).
"""

from __future__ import annotations

from collections.abc import Mapping

from vfl.errors import ProtocolError
from vfl.transport.base import Exchange, Handler, Transport
from vfl.transport.ledger import Phase
from vfl.wire import Message


class ColocatedTransport(Transport):
    """A transport plus parties reached by direct calls.

    Args:
        remote: The transport to the other parties.
        local: Handlers of the parties in this process, by party id.
    """

    def __init__(self, remote: Transport, local: Mapping[int, Handler]) -> None:
        super().__init__(ledger=remote.ledger)
        overlap = set(local) & set(remote.party_ids)
        if overlap:
            raise ProtocolError(f"parties {sorted(overlap)} are both local and remote")
        self.remote = remote
        self.local = dict(local)

    @property
    def party_ids(self) -> tuple[int, ...]:
        """Every party, local or remote, ascending."""
        return tuple(sorted([*self.remote.party_ids, *self.local]))

    def request(self, messages: Mapping[int, Message], *, phase: Phase = "train") -> Exchange:
        """Local parties answer directly; the rest go through the remote transport."""
        remote = {p: m for p, m in messages.items() if p not in self.local}
        exchange = self.remote.request(remote, phase=phase) if remote else Exchange({})
        replies, failures = dict(exchange.replies), dict(exchange.failures)
        for party, message in messages.items():
            if party in self.local:
                try:
                    replies[party] = self.local[party](message)
                except Exception as error:  # failures are reported as data
                    failures[party] = error
        return Exchange(replies, failures)

    def close(self) -> None:
        """Close the remote transport."""
        self.remote.close()
