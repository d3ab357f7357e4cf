"""``vfl serve`` with a SecureBoost model: each round trip's looked-up rows walk the trees.

The scorer (``vfl.deploy.scoring``) asks every party to look the IDs up (``LookupRequest``); each
party keeps the encoded rows, and the label holder then walks all trees a depth at a time, asking
each owner once per depth which of the rows go left at its records: ``max_depth`` more round
trips per batch of IDs, whatever the number of trees.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from vfl.boost.link import TransportLink
from vfl.deploy.boost_predicting import margin_logits, set_up_holders
from vfl.deploy.scoring import ScoringLoop
from vfl.run.tree_bundles import LabelHolderBundle
from vfl.transport.grpc_transport import GrpcTransport
from vfl.wire import Shutdown


@dataclass(frozen=True)
class BoostModel:
    """The label holder's SecureBoost bundle, as the scorer uses it.

    Attributes:
        bundle: The label holder's bundle.
        max_frame_bytes: The largest frame the parties accept.
    """

    bundle: LabelHolderBundle
    max_frame_bytes: int

    @property
    def classes(self) -> tuple[str, ...]:
        """The class names, in class-index order."""
        return self.bundle.classes

    def set_up(self, transport: GrpcTransport) -> ScoringLoop:
        """Every connected party loads its bundle; the walk that scores with them."""
        set_up_holders(transport, self.bundle)
        link = TransportLink(transport, max_frame_bytes=self.max_frame_bytes)
        return BoostWalk(self.bundle, link)


class BoostWalk:
    """Scores a round trip's looked-up rows by walking the trees with their owners.

    Args:
        bundle: The label holder's bundle.
        link: The way to the parties.
    """

    def __init__(self, bundle: LabelHolderBundle, link: TransportLink) -> None:
        self.bundle = bundle
        self.link = link
        self.rounds = 0

    def logits_for(self, ids: torch.Tensor, split: int) -> torch.Tensor:
        """``(n, 1)`` logits of the looked-up rows at positions ``ids`` (all were looked up)."""
        return margin_logits(self.bundle, self.link, len(ids))[ids]

    def close(self) -> None:
        """Tell every party the service is over."""
        transport = self.link.transport
        shutdown = {p: Shutdown(round=self.rounds) for p in transport.party_ids}
        transport.request(shutdown, phase="setup")
