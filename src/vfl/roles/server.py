"""The server (label holder): labels, the head model, the loss and the head's optimizer."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from vfl.errors import DIVERGED_HINT, DataError, TrainingDiverged, WireError
from vfl.models.device import model_device
from vfl.results.metrics import Task
from vfl.roles.local import LocalSteps, descend, snapshot
from vfl.wire import SPLIT_TEST, SPLIT_TRAIN
from vfl.wire.checks import all_finite, all_finite_parameters


class Server:
    """Fuses the parties' embeddings, computes the loss and returns d loss / d embedding.

    Args:
        head: Module taking the list of embeddings (ascending party id) to ``(B, output_dim)``.
        task: The classification task (loss, predictions).
        train_labels: ``int64`` labels of the aligned training split, ``(N,)``.
        test_labels: ``int64`` labels of the test split, ``(N_test,)``.
        optimizer: Optimizer over ``head``'s parameters; ``None`` for a head without any (a
            plain sum or mean of the parties' outputs).
        embedding_dims: The embedding width each party must send, by party id.
    """

    def __init__(
        self,
        *,
        head: nn.Module,
        task: Task,
        train_labels: torch.Tensor,
        test_labels: torch.Tensor,
        optimizer: torch.optim.Optimizer | None,
        embedding_dims: Mapping[int, int],
    ) -> None:
        for name, labels in (("train", train_labels), ("test", test_labels)):
            if labels.dtype != torch.int64 or labels.ndim != 1:
                raise DataError(
                    f"server {name} labels must be 1-D int64, got shape"
                    f" {tuple(labels.shape)} ({labels.dtype})"
                )
            if len(labels) and (int(labels.min()) < 0 or int(labels.max()) >= task.num_classes):
                raise DataError(f"server {name} labels must lie in [0, {task.num_classes - 1}]")
        self.head = head
        self.device = model_device(head)
        self.task = task
        self.labels = {SPLIT_TRAIN: train_labels, SPLIT_TEST: test_labels}
        self.optimizer = optimizer
        self.embedding_dims = dict(sorted(embedding_dims.items()))

    @property
    def party_ids(self) -> tuple[int, ...]:
        """The parties whose embeddings the head fuses, ascending."""
        return tuple(self.embedding_dims)

    def train_step(
        self,
        ids: torch.Tensor,
        embeddings: Mapping[int, torch.Tensor],
        steps: LocalSteps | None = None,
    ) -> tuple[float, dict[int, torch.Tensor]]:
        """Q head steps on the (stale) embeddings; returns the first loss and its input grads.

        The gradients d loss / d embedding are those of the first step, taken at the head the
        round started with: what the parties receive. Later steps (Q > 1) reuse the same
        embeddings, as FedBCD's and C-VFL's local iterations do.
        """
        loss, grads = self.train_on(ids, self._ordered(embeddings, len(ids)), steps)
        return loss, dict(zip(self.party_ids, grads, strict=True))

    def train_on_sum(
        self, ids: torch.Tensor, total: torch.Tensor, steps: LocalSteps | None = None
    ) -> tuple[float, torch.Tensor]:
        """Like ``train_step`` for a sum-fusion head fed the (estimated) sum of the embeddings.

        Returns the first loss and d loss / d sum, which is every party's gradient.
        """
        width = next(iter(self.embedding_dims.values()))
        _check_embedding(total, (len(ids), width), "the aggregated embedding")
        loss, grads = self.train_on(ids, [total], steps)
        return loss, grads[0]

    def train_on(
        self, ids: torch.Tensor, inputs: list[torch.Tensor], steps: LocalSteps | None = None
    ) -> tuple[float, list[torch.Tensor]]:
        """Q head steps on fixed head inputs; the first loss and the first step's input grads."""
        steps = steps or LocalSteps()
        inputs = [self._on_device(e).requires_grad_(True) for e in inputs]
        labels = self._on_device(self.labels[SPLIT_TRAIN][ids])
        if not self.head.training:
            self.head.train()
        losses: list[torch.Tensor] = []
        anchor = snapshot(self.head) if steps.proximal_mu > 0 else None

        def objective() -> tuple[torch.Tensor, None]:
            loss = self.task.loss(self.head(inputs), labels)
            losses.append(loss.detach())
            return loss, None

        descend(
            self.head, self.optimizer, [objective], proximal_mu=steps.proximal_mu, anchor=anchor
        )
        first = float(losses[0])  # read once the step is queued: one wait on an accelerator
        if not math.isfinite(first):  # before any gradient leaves the server
            raise TrainingDiverged(f"the training loss is {first}: {DIVERGED_HINT}")
        grads = []
        for embedding in inputs:
            assert embedding.grad is not None  # every input feeds the head
            grads.append(embedding.grad)
            embedding.requires_grad_(False)
        if steps.count > 1 and self.optimizer is not None:
            descend(
                self.head,
                self.optimizer,
                [objective] * (steps.count - 1),
                proximal_mu=steps.proximal_mu,
                anchor=anchor,
            )
        return first, grads

    def input_gradients(
        self, ids: torch.Tensor, embeddings: Mapping[int, torch.Tensor]
    ) -> dict[int, torch.Tensor]:
        """D loss / d embedding for every party at the current head, without a head step."""
        return self.sync_gradients(ids, embeddings)[1]

    def sync_gradients(
        self, ids: torch.Tensor, embeddings: Mapping[int, torch.Tensor]
    ) -> tuple[float, dict[int, torch.Tensor]]:
        """The loss and d loss / d embedding at the current head, without a head step.

        Raises:
            TrainingDiverged: if the loss is not finite (before any gradient leaves the server).
        """
        ordered = self._ordered(embeddings, len(ids))
        inputs = [self._on_device(e).requires_grad_(True) for e in ordered]
        if not self.head.training:
            self.head.train()
        loss = self.task.loss(self.head(inputs), self._on_device(self.labels[SPLIT_TRAIN][ids]))
        value = float(loss.detach())
        if not math.isfinite(value):
            raise TrainingDiverged(f"the training loss is {value}: {DIVERGED_HINT}")
        grads = torch.autograd.grad(loss, inputs)
        return value, dict(zip(self.party_ids, grads, strict=True))

    def parameter_vector(self) -> torch.Tensor:
        """The head's parameters as one flat vector (what C_0 compresses); empty without any."""
        params = list(self.head.parameters())
        if not params:
            return torch.zeros(0)
        return nn.utils.parameters_to_vector(params).detach()

    def predict(self, embeddings: Mapping[int, torch.Tensor], batch: int) -> torch.Tensor:
        """Logits for ``batch`` samples from their embeddings, without updating anything."""
        return self.predict_on(self._ordered(embeddings, batch))

    def predict_on_sum(self, total: torch.Tensor) -> torch.Tensor:
        """Logits of a sum-fusion head from the sum of the embeddings."""
        width = next(iter(self.embedding_dims.values()))
        _check_embedding(total, (len(total), width), "the aggregated embedding")
        return self.predict_on([total])

    @torch.no_grad()
    def predict_on(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        """Logits from the head's inputs, in evaluation mode (on the CPU)."""
        self.head.eval()
        logits: torch.Tensor = self.head([self._on_device(e) for e in inputs])
        self.head.train()
        return logits.cpu()

    def head_is_finite(self) -> bool:
        """Whether every parameter of the head is finite (one wait on an accelerator)."""
        return all_finite_parameters(self.head.parameters())

    def _on_device(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` (from the wire, on the host) detached, on the head's device."""
        return tensor.detach().to(self.device, non_blocking=True)

    def _ordered(self, embeddings: Mapping[int, torch.Tensor], batch: int) -> list[torch.Tensor]:
        if set(embeddings) != set(self.embedding_dims):
            raise WireError(
                f"server expected embeddings from parties {self.party_ids}, got"
                f" {sorted(embeddings)}"
            )
        ordered = []
        for party, width in self.embedding_dims.items():
            _check_embedding(embeddings[party], (batch, width), f"party {party}")
            ordered.append(embeddings[party])
        return ordered

    def state_dict(self) -> dict[str, Any]:
        """Head and optimizer state, for checkpoints."""
        optimizer = None if self.optimizer is None else self.optimizer.state_dict()
        return {"head": self.head.state_dict(), "optimizer": optimizer}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from ``state_dict``."""
        self.head.load_state_dict(state["head"])
        if self.optimizer is not None:
            self.optimizer.load_state_dict(state["optimizer"])

    def check_parties(self, party_ids: Sequence[int]) -> None:
        """Raise unless ``party_ids`` are exactly the parties this server fuses."""
        if tuple(sorted(party_ids)) != self.party_ids:
            raise DataError(
                f"server fuses parties {self.party_ids} but the transport reaches"
                f" {tuple(sorted(party_ids))}"
            )


def _check_embedding(embedding: torch.Tensor, shape: tuple[int, int], source: str) -> None:
    if tuple(embedding.shape) != shape or not torch.is_floating_point(embedding):
        raise WireError(
            f"{source} sent an embedding of shape {tuple(embedding.shape)} ({embedding.dtype});"
            f" expected {shape} floating point"
        )
    # An embedding on the device comes from a role in this process (the active party), not
    # from a wire: reading it would wait for the device, and a non-finite one makes the loss
    # non-finite, which stops the round before any gradient leaves.
    if embedding.device.type == "cpu" and not all_finite(embedding):
        raise WireError(
            f"{source} sent an embedding with non-finite values (its model diverged, or the"
            " message is corrupt)"
        )
