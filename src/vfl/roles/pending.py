"""The round a party has embedded and not yet updated on, and how it survives a checkpoint.

Between its embedding and its gradient a round is open at the party: the embedding keeps its
autograd graph for the first local step. With pipelined rounds a checkpoint can fall inside that
gap (the gradient waits at the server for the next round's batch), so the open round is part of
the party's state: its round, its ids and the generators' states before the forward pass (the
CPU's and the model device's). A restored party rebuilds the embedding from them, drawing what
the forward pass drew the first time (dropout), and then puts back the module buffers the
checkpoint holds (a second forward pass in training mode would move BatchNorm's running
statistics again), so the gradient meets the graph and the model the uninterrupted run had.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

CPU = "cpu"


def generator_states(device: torch.device) -> dict[str, torch.Tensor]:
    """The states of the generators a forward pass on ``device`` may draw from."""
    states = {CPU: torch.get_rng_state()}
    if device.type != CPU:
        states[device.type] = torch.get_device_module(device.type).get_rng_state(device)
    return states


@dataclass(frozen=True)
class PendingRound:
    """A round the party has embedded and is waiting to update on.

    Attributes:
        round: The round.
        ids: Its batch's row positions.
        embedding: The embedding with its graph, for the first local step.
        rng: ``generator_states`` before the forward pass that made ``embedding``.
    """

    round: int
    ids: torch.Tensor
    embedding: torch.Tensor
    rng: dict[str, torch.Tensor]

    def state_dict(self) -> dict[str, Any]:
        """What rebuilds it after a restart (the graph itself cannot be saved)."""
        return {"round": self.round, "ids": self.ids, "rng": self.rng}


@dataclass(frozen=True)
class SavedRound:
    """An open round read back from a checkpoint, to be embedded again when its gradient comes."""

    round: int
    ids: torch.Tensor
    rng: dict[str, torch.Tensor]

    @classmethod
    def from_state(cls, state: dict[str, Any] | None) -> SavedRound | None:
        """From ``PendingRound.state_dict`` (``None``: no round was open)."""
        if state is None:
            return None
        return cls(int(state["round"]), state["ids"], dict(state["rng"]))

    def embed_again(
        self,
        model: nn.Module,
        forward: Callable[[torch.Tensor], torch.Tensor],
        device: torch.device,
    ) -> PendingRound:
        """The open round with its embedding rebuilt by ``forward(ids)`` under the saved draws.

        ``model``'s buffers and the global generators are left as they were before.
        """
        buffers = [buffer.detach().clone() for buffer in model.buffers()]
        accelerator = device.type != CPU and device.type in self.rng  # saved on this device
        with torch.random.fork_rng(
            devices=[device.index or 0] if accelerator else [],
            device_type=device.type if accelerator else None,
        ):
            torch.set_rng_state(self.rng[CPU])
            if accelerator:
                torch.get_device_module(device.type).set_rng_state(self.rng[device.type], device)
            embedding = forward(self.ids)
        with torch.no_grad():
            for buffer, kept in zip(model.buffers(), buffers, strict=True):
                buffer.copy_(kept)
        return PendingRound(self.round, self.ids, embedding, self.rng)
