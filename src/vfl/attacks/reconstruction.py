"""Feature reconstruction by the server: an inverse model from what it receives to a party's rows.

The threat model of model-inversion attacks on split learning (He, Zhang and Lee, "Model
Inversion Attacks against Collaborative Inference", ACSAC 2019, their query-free setting with
auxiliary data): the server knows some of a party's rows (an auxiliary fraction, with their ids)
and receives, for every training sample, what that party uploads. It trains a network from each
sample's latest upload back to the party's features on the auxiliary rows, then applies it to
every other sample.

What it receives decides what it can learn. Without PBM it decodes each party's embedding (exact,
or compressed, or sparsified); with PBM sent in the clear, one party's noisy estimate
``(C/(βb))(q − b/2)``; with PBM under secure aggregation only the estimate of the *sum* over all
parties, and the inverse model can only recover what that sum says about one party's features.
"""

from __future__ import annotations

import copy
import itertools
import math
from typing import Any

import torch
from torch import nn

from vfl.attacks.base import Attack, Inference, Knowledge, KnownRows
from vfl.run.observe import Delivery

UPLOADS = ("EmbedReply", "CompressedEmbedReply", "PackedCounts", "MaskedCounts")


class FeatureReconstruction(Attack):
    """An MLP from each sample's latest upload (or secure sum) to the target party's features.

    Args:
        party: The party whose features are reconstructed.
        rows: Rows of the training split.
        known: The auxiliary rows the server knows.
        hidden: Hidden widths of the inverse model.
        epochs: Passes of Adam over the auxiliary rows.
        batch_size: Rows per step.
        lr: Adam's learning rate.
    """

    name = "feature_reconstruction"
    role = "server"

    def __init__(
        self,
        party: int,
        rows: int,
        known: KnownRows,
        *,
        hidden: tuple[int, ...],
        epochs: int,
        batch_size: int,
        lr: float,
    ) -> None:
        self.party, self.known = party, known
        self.hidden, self.epochs, self.batch_size, self.lr = hidden, epochs, batch_size, lr
        self.views: torch.Tensor | None = None  # (rows, P): each sample's latest upload
        self.rows = rows
        self.seen_as: set[str] = set()

    def observe(self, delivery: Delivery) -> None:
        """Keep each training sample's latest upload that carries the party's embedding."""
        if delivery.phase != "train" or delivery.kind not in UPLOADS:
            return
        if delivery.tensor is None or delivery.ids is None or self.party not in delivery.parties:
            return
        if self.views is None:
            self.views = torch.full((self.rows, delivery.tensor.shape[1]), torch.nan)
        self.views[delivery.ids] = delivery.tensor.to(torch.float32)
        alone = delivery.parties == (self.party,)
        self.seen_as.add(f"{delivery.kind} of {'the party alone' if alone else 'every party'}")

    def infer(self, own: Knowledge, *, seed: int) -> Inference:
        """Reconstructed features of every sample seen outside the auxiliary rows."""
        if self.views is None:
            return Inference(torch.zeros(0, dtype=torch.int64), notes={"seen": "nothing"})
        seen = ~torch.isnan(self.views).any(dim=1)
        aux = self.known.ids[seen[self.known.ids]]
        targets = self.known.features[seen[self.known.ids]].reshape(len(aux), -1)
        seen[self.known.ids] = False
        ids = torch.nonzero(seen).flatten()
        mean, std = self.views[aux].mean(dim=0), self.views[aux].std(dim=0)
        std = torch.where(std > 1e-6, std, torch.ones_like(std))  # constant on the aux rows
        torch.manual_seed(seed)
        inverse = self._fit((self.views[aux] - mean) / std, targets)
        with torch.no_grad():
            features = inverse((self.views[ids] - mean) / std)
        notes = {"seen": "; ".join(sorted(self.seen_as))}
        return Inference(ids, features=features, notes=notes)

    def _fit(self, inputs: torch.Tensor, targets: torch.Tensor) -> nn.Module:
        """Adam on 80 % of the auxiliary rows, keeping the epoch best on the other 20 %.

        A rational attacker stops where held-out rows stop improving, so that noisy uploads
        do not make it fit noise, and guesses the rows' mean when that does better still.
        """
        order = torch.randperm(len(inputs))
        held = order[: max(1, len(order) // 5)]
        fit = order[len(held) :] if len(order) > 1 else order
        model = _mlp([inputs.shape[1], *self.hidden, targets.shape[1]])
        optimizer = torch.optim.Adam(model.parameters(), lr=self.lr)
        best, best_state = math.inf, copy.deepcopy(model.state_dict())
        for _ in range(self.epochs):
            for batch in torch.split(fit[torch.randperm(len(fit))], self.batch_size):
                optimizer.zero_grad()
                torch.autograd.backward(
                    nn.functional.mse_loss(model(inputs[batch]), targets[batch])
                )
                optimizer.step()
            with torch.no_grad():
                loss = float(nn.functional.mse_loss(model(inputs[held]), targets[held]))
            if loss < best:
                best, best_state = loss, copy.deepcopy(model.state_dict())
        model.load_state_dict(best_state)
        mean = targets[fit].mean(dim=0)
        if float(((targets[held] - mean) ** 2).mean()) < best:
            return _Constant(mean)
        return model

    def state_dict(self) -> dict[str, Any]:
        """Every sample's latest upload, and what kind of upload it was."""
        return {"views": self.views, "seen_as": sorted(self.seen_as)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict()``."""
        self.views, self.seen_as = state["views"], set(state["seen_as"])


def _mlp(widths: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in itertools.pairwise(widths[:-1]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(widths[-2], widths[-1]))


class _Constant(nn.Module):
    """Guesses the same row for every input."""

    def __init__(self, row: torch.Tensor) -> None:
        super().__init__()
        self.row = row

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """``row`` once per input row."""
        return self.row.expand(len(inputs), -1)
