"""A party: one organisation's feature block, its bottom model and its optimizer.

A party only ever answers the server. It never sees labels, other parties' features or other
parties' embeddings in this protocol; it learns only d loss / d (its own embedding).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from vfl.checks import all_finite, id_bounds
from vfl.data.dataset import check_finite
from vfl.errors import DataError, ProtocolError, WireError
from vfl.wire import (
    SPLIT_TEST,
    SPLIT_TRAIN,
    Ack,
    EmbedReply,
    EmbedRequest,
    EvalRequest,
    GradRequest,
    Message,
    Shutdown,
)


class Party:
    """Holds a feature block and trains a bottom model on it.

    Args:
        party_id: This party's id, 1..M.
        train_features: Its block of the (aligned) training split, ``(N, ...)``.
        test_features: Its block of the test split, ``(N_test, ...)``.
        model: The bottom model, mapping a batch of its block to ``(B, P)`` embeddings.
        optimizer: Optimizer over ``model``'s parameters.
    """

    def __init__(
        self,
        party_id: int,
        *,
        train_features: torch.Tensor,
        test_features: torch.Tensor,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
    ) -> None:
        for name, block in (("train", train_features), ("test", test_features)):
            if not torch.is_floating_point(block):
                raise DataError(
                    f"party {party_id}: {name} features must be floating point, got {block.dtype}"
                )
            check_finite(block.numpy(), what=f"party {party_id}'s {name} features")
        self.party_id = party_id
        self.features = {SPLIT_TRAIN: train_features, SPLIT_TEST: test_features}
        self.model = model
        self.optimizer = optimizer
        self._pending: tuple[int, torch.Tensor] | None = None
        self._last_round = -1

    def handle(self, message: Message) -> Message:
        """Answer one request from the server."""
        if isinstance(message, EmbedRequest):
            return self._embed(message)
        if isinstance(message, GradRequest):
            return self._apply_grad(message)
        if isinstance(message, EvalRequest):
            return self._evaluate(message)
        if isinstance(message, Shutdown):
            self._pending = None
            return Ack(round=message.round)
        raise ProtocolError(f"party {self.party_id} cannot handle {type(message).__name__}")

    def _embed(self, request: EmbedRequest) -> EmbedReply:
        if request.round <= self._last_round:
            raise WireError(
                f"party {self.party_id}: embed request for round {request.round}"
                f" after round {self._last_round} (stale or replayed)"
            )
        ids = self._check_ids(request.ids, SPLIT_TRAIN)
        self._last_round = request.round
        if not self.model.training:
            self.model.train()
        embedding = self.model(self.features[SPLIT_TRAIN][ids])  # (B, P)
        self._pending = (request.round, embedding)
        return EmbedReply(round=request.round, embedding=embedding.detach())

    def _apply_grad(self, request: GradRequest) -> Ack:
        if self._pending is None or self._pending[0] != request.round:
            expected = "none pending" if self._pending is None else f"round {self._pending[0]}"
            raise WireError(
                f"party {self.party_id}: gradient for round {request.round} but {expected}"
            )
        _, embedding = self._pending
        if request.grad.shape != embedding.shape or request.grad.dtype != embedding.dtype:
            raise WireError(
                f"party {self.party_id}: gradient of shape {tuple(request.grad.shape)}"
                f" ({request.grad.dtype}) for an embedding of shape"
                f" {tuple(embedding.shape)} ({embedding.dtype})"
            )
        if not all_finite(request.grad):
            raise WireError(
                f"party {self.party_id}: gradient for round {request.round} holds non-finite values"
            )
        self.optimizer.zero_grad(set_to_none=True)
        torch.autograd.backward(embedding, request.grad)
        self.optimizer.step()
        self._pending = None
        return Ack(round=request.round)

    @torch.no_grad()
    def _evaluate(self, request: EvalRequest) -> EmbedReply:
        if request.split not in self.features:
            raise WireError(
                f"party {self.party_id}: unknown split code {request.split}; valid:"
                f" {sorted(self.features)}"
            )
        ids = self._check_ids(request.ids, request.split)
        self.model.eval()
        embedding = self.model(self.features[request.split][ids])
        self.model.train()
        return EmbedReply(round=request.round, embedding=embedding)

    def _check_ids(self, ids: torch.Tensor, split: int) -> torch.Tensor:
        rows = len(self.features[split])
        if ids.dtype != torch.int64 or ids.ndim != 1 or len(ids) == 0:
            raise WireError(
                f"party {self.party_id}: ids must be a non-empty 1-D int64 tensor,"
                f" got shape {tuple(ids.shape)} ({ids.dtype})"
            )
        low, high = id_bounds(ids)
        if low < 0 or high >= rows:
            raise WireError(
                f"party {self.party_id}: ids must lie in [0, {rows - 1}], got [{low}, {high}]"
            )
        return ids

    def state_dict(self) -> dict[str, Any]:
        """Model and optimizer state, for checkpoints."""
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "last_round": self._last_round,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from ``state_dict``."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self._last_round = int(state["last_round"])
        self._pending = None
