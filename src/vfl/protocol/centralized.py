"""The centralized baseline: the same combined model trained in one process, no messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from vfl.models.device import model_device
from vfl.models.head import CombinedModel
from vfl.models.optim import LearningRateSchedule
from vfl.protocol.base import RoundCallback
from vfl.protocol.sampler import BatchSampler, chunks
from vfl.results.metrics import Task, evaluate_logits
from vfl.wire import SPLIT_TEST, SPLIT_TRAIN


class CentralizedTraining:
    """Trains ``CombinedModel`` on all feature blocks at once with the VFL batch order.

    Args:
        model: Bottoms and head in one module.
        optimizer: Optimizer over all of ``model``'s parameters.
        task: The classification task.
        train_blocks: Every party's training block, in party order.
        test_blocks: Every party's test block, in party order.
        train_labels: Training labels.
        test_labels: Test labels.
        sampler: Batch order (the same as the VFL run's for a like-for-like comparison).
        eval_batch_size: Samples per evaluation batch.
        learning_rate: Per-round learning rate (the VFL run's schedule), or ``None``.
    """

    @property
    def ledger(self) -> None:
        """Nothing is communicated, so there is no ledger."""
        return None

    def __init__(
        self,
        *,
        model: CombinedModel,
        optimizer: torch.optim.Optimizer,
        task: Task,
        train_blocks: Sequence[torch.Tensor],
        test_blocks: Sequence[torch.Tensor],
        train_labels: torch.Tensor,
        test_labels: torch.Tensor,
        sampler: BatchSampler,
        eval_batch_size: int,
        learning_rate: LearningRateSchedule | None = None,
    ) -> None:
        self.model = model
        self.optimizer = optimizer
        self.task = task
        self.blocks = {SPLIT_TRAIN: list(train_blocks), SPLIT_TEST: list(test_blocks)}
        self.labels = {SPLIT_TRAIN: train_labels, SPLIT_TEST: test_labels}
        self.sampler = sampler
        self.eval_batch_size = eval_batch_size
        self.learning_rate = learning_rate
        self.device = model_device(model)
        self.rounds = 0

    def train_epoch(
        self, epoch: int, *, on_round: RoundCallback | None = None, start: int = 0
    ) -> float:
        """Run one epoch of steps from step ``start`` of it on; returns the mean training loss."""
        total = 0.0
        batches = self.sampler.epoch(epoch, start)
        self.model.train()
        for ids in batches:
            if self.learning_rate is not None:
                self.learning_rate.apply(self.optimizer, self.rounds)
            logits = self.model(self._batch(SPLIT_TRAIN, ids))
            labels = self.labels[SPLIT_TRAIN][ids].to(self.device, non_blocking=True)
            loss = self.task.loss(logits, labels)
            self.optimizer.zero_grad(set_to_none=True)
            torch.autograd.backward(loss)
            self.optimizer.step()
            self.rounds += 1
            value = float(loss.detach())  # one read a step, once the step is queued
            total += value
            if on_round is not None:
                on_round(value)
        return total / len(batches)

    @torch.no_grad()
    def evaluate(self, split: int) -> dict[str, float]:
        """Loss and accuracy (plus F1 and AUC for binary tasks) on a whole split."""
        self.model.eval()
        labels = self.labels[split]
        logits = [
            self.model(self._batch(split, ids)).cpu()
            for ids in chunks(len(labels), self.eval_batch_size)
        ]
        self.model.train()
        return evaluate_logits(self.task, torch.cat(logits), labels)

    def _batch(self, split: int, ids: torch.Tensor) -> list[torch.Tensor]:
        """Every party's rows ``ids`` of ``split``, on the model's device."""
        # The gather the parties use (roles.party): the baseline must not pay a slower one.
        return [
            torch.index_select(block, 0, ids).to(self.device, non_blocking=True)
            for block in self.blocks[split]
        ]

    def state_dict(self) -> dict[str, Any]:
        """Model, optimizer and round counter."""
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "rounds": self.rounds,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from ``state_dict``."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.rounds = int(state["rounds"])

    def setup(self) -> None:
        """Nothing to set up."""

    def privacy_spent(self) -> dict[str, float] | None:
        """No privacy mechanism."""
        return None

    def close(self) -> None:
        """Nothing to release."""
