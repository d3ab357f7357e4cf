"""The round a party has embedded and not yet updated on, and how it survives a checkpoint.

Between its embedding and its gradient a round is open at the party: the embedding keeps its
autograd graph for the first local step. With pipelined rounds a checkpoint can fall inside that
gap (the gradient waits at the server for the next round's batch), so the open round is part of
the party's state: its round, its ids and the CPU generator's state before the forward pass. A
restored party rebuilds the embedding from them, drawing what the forward pass drew the first
time (dropout on the CPU), so the gradient meets the graph the uninterrupted run had.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class PendingRound:
    """A round the party has embedded and is waiting to update on.

    Attributes:
        round: The round.
        ids: Its batch's row positions.
        embedding: The embedding with its graph, for the first local step.
        rng: The CPU generator's state before the forward pass that made ``embedding``.
    """

    round: int
    ids: torch.Tensor
    embedding: torch.Tensor
    rng: torch.Tensor

    def state_dict(self) -> dict[str, Any]:
        """What rebuilds it after a restart (the graph itself cannot be saved)."""
        return {"round": self.round, "ids": self.ids, "rng": self.rng}


@dataclass(frozen=True)
class SavedRound:
    """An open round read back from a checkpoint, to be embedded again when its gradient comes."""

    round: int
    ids: torch.Tensor
    rng: torch.Tensor

    @classmethod
    def from_state(cls, state: dict[str, Any] | None) -> SavedRound | None:
        """From ``PendingRound.state_dict`` (``None``: no round was open)."""
        if state is None:
            return None
        return cls(int(state["round"]), state["ids"], state["rng"])

    def embed_again(self, forward: Callable[[torch.Tensor], torch.Tensor]) -> PendingRound:
        """The open round with its embedding rebuilt by ``forward(ids)`` under the saved draws.

        The global generator is left as it was: the draws are those of the first forward pass.
        """
        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(self.rng)
            embedding = forward(self.ids)
        return PendingRound(self.round, self.ids, embedding, self.rng)
