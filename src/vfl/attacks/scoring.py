"""Scoring an attack's inference against the truth it never held.

Metrics (each prefixed ``attack_`` in ``metrics.jsonl`` and ``summary.json``):

- ``<score>_auc``: ROC AUC of each binary score (``norm_auc``, ``direction_auc``) as an attacker
  reads it: the better of the score and its negation, so at least 0.5 (a random guess), and
  ``<score>_sign``: +1 where larger scores mean the positive class, -1 where smaller ones do
  (an AUC of 0.34 for the score is 0.66 for its negation: an attacker picks the sign, from a few
  known labels or, for norms, from which class is rarer);
- ``accuracy``: of inferred labels; ``accuracy_prior``: of always guessing the most common class
  among the scored samples (what no attack at all achieves);
- ``mse`` and, for image blocks, ``ssim`` of reconstructed features; ``mse_prior`` and
  ``ssim_prior``: those of guessing every row as the mean of the auxiliary rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from vfl.attacks.base import Inference
from vfl.attacks.metrics import accuracy, mse, roc_auc, ssim
from vfl.config import AttackConfig
from vfl.data.vertical import VerticalData


@dataclass(frozen=True)
class Truth:
    """What scoring needs: the training labels and, for reconstruction, the party's rows.

    Attributes:
        labels: Training labels.
        num_classes: Number of classes.
        features: The target party's training block (server attacks), else None.
    """

    labels: torch.Tensor
    num_classes: int
    features: torch.Tensor | None = None

    @classmethod
    def of(cls, attack: AttackConfig, data: VerticalData) -> Truth:
        """The truth for ``attack`` on ``data``."""
        block = data.train_blocks[attack.party - 1] if attack.role == "server" else None
        return cls(data.train_labels, data.task.num_classes, block)


def score(inference: Inference, truth: Truth) -> dict[str, float]:
    """Every metric the inference allows (``attack_`` prefix)."""
    metrics: dict[str, float] = {}
    labels = truth.labels[inference.ids]
    for name, values in inference.scores.items():
        auc = roc_auc(values, labels)
        metrics[f"attack_{name}_auc"] = max(auc, 1.0 - auc)  # NaN stays NaN
        metrics[f"attack_{name}_sign"] = 1.0 if not auc < 0.5 else -1.0
    if inference.labels is not None:
        metrics["attack_accuracy"] = accuracy(inference.labels, labels)
        counts = torch.bincount(labels, minlength=truth.num_classes)
        metrics["attack_accuracy_prior"] = float(counts.max()) / max(len(labels), 1)
    if inference.features is not None and truth.features is not None:
        metrics.update(_reconstruction(inference, truth.features))
    return metrics


def _reconstruction(inference: Inference, block: torch.Tensor) -> dict[str, float]:
    truth = block[inference.ids]
    estimate = inference.features
    assert estimate is not None
    estimate = estimate.reshape(truth.shape)
    seen = torch.ones(len(block), dtype=torch.bool)
    seen[inference.ids] = False
    prior = block[seen].mean(dim=0, keepdim=True).expand_as(truth)  # the auxiliary rows' mean
    metrics = {"attack_mse": mse(estimate, truth), "attack_mse_prior": mse(prior, truth)}
    if truth.ndim == 4:
        value_range = float(block.max() - block.min())
        metrics["attack_ssim"] = ssim(estimate, truth, data_range=value_range)
        metrics["attack_ssim_prior"] = ssim(prior, truth, data_range=value_range)
    return metrics
