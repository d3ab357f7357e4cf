"""Classification tasks and evaluation metrics.

A binary task uses one logit and the logistic loss; a task with more classes uses one logit per
class and cross-entropy. Binary tasks also report F1 of the positive class (threshold 0.5) and
ROC-AUC.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch
from torch.nn import functional


@dataclass(frozen=True)
class Task:
    """A classification task with ``num_classes`` classes."""

    num_classes: int

    def __post_init__(self) -> None:
        if self.num_classes < 2:
            raise ValueError(f"a classification task needs >= 2 classes, got {self.num_classes}")

    @property
    def binary(self) -> bool:
        """Whether the task has exactly two classes."""
        return self.num_classes == 2

    @property
    def output_dim(self) -> int:
        """Logits the head must produce: 1 for binary tasks, else one per class."""
        return 1 if self.binary else self.num_classes

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean loss over the batch; ``logits`` is ``(B, output_dim)``, ``labels`` ``(B,)``."""
        if self.binary:
            return functional.binary_cross_entropy_with_logits(logits[:, 0], labels.float())
        return functional.cross_entropy(logits, labels)

    def positive_scores(self, logits: torch.Tensor) -> torch.Tensor:
        """Binary tasks: probability of class 1, shape ``(B,)``."""
        return torch.sigmoid(logits[:, 0])

    def predict(self, logits: torch.Tensor) -> torch.Tensor:
        """Predicted class indices, shape ``(B,)``."""
        if self.binary:
            return (logits[:, 0] > 0).long()
        return logits.argmax(dim=1)


def evaluate_logits(task: Task, logits: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
    """Loss and accuracy, plus F1 and ROC-AUC for binary tasks, over a whole split."""
    metrics = {
        "loss": float(task.loss(logits, labels)),
        "accuracy": float((task.predict(logits) == labels).float().mean()),
    }
    if task.binary:
        y = labels.numpy()
        metrics["f1"] = f1_score(y, task.predict(logits).numpy())
        metrics["auc"] = roc_auc(y, task.positive_scores(logits).numpy())
    return metrics


def f1_score(labels: npt.NDArray[np.integer], predictions: npt.NDArray[np.integer]) -> float:
    """F1 of the positive class; 0 when there are no true positives."""
    true_pos = int(np.sum((predictions == 1) & (labels == 1)))
    if true_pos == 0:
        return 0.0
    precision = true_pos / int(np.sum(predictions == 1))
    recall = true_pos / int(np.sum(labels == 1))
    return 2 * precision * recall / (precision + recall)


def roc_auc(labels: npt.NDArray[np.integer], scores: npt.NDArray[np.floating]) -> float:
    """Area under the ROC curve: P(score of a positive > score of a negative), ties count 1/2.

    Computed from average ranks (the Mann-Whitney U statistic) in O(n log n). NaN when only
    one class is present.
    """
    labels = np.asarray(labels)
    positives = int(np.sum(labels == 1))
    negatives = len(labels) - positives
    if positives == 0 or negatives == 0:
        return float("nan")
    ranks = _average_ranks(np.asarray(scores, dtype=np.float64))
    rank_sum = float(ranks[labels == 1].sum())
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def _average_ranks(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    # Start of each run of equal values, and the average 1-based rank within the run.
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], len(values)]
    run_rank = (starts + 1 + ends) / 2.0
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.repeat(run_rank, ends - starts)
    return ranks
