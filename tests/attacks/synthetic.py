"""Synthetic cases whose leakage is known, for the attack tests."""

from __future__ import annotations

import torch

from vfl.attacks import KnownLabels
from vfl.attacks.base import Attack
from vfl.run.observe import Delivery


def logistic_gradients(
    embeddings: torch.Tensor, labels: torch.Tensor, weight: torch.Tensor
) -> torch.Tensor:
    """Exact ``d loss / d h`` of a logistic head ``z = h·w`` with binary cross-entropy.

    Each row is ``(σ(z_i) − y_i) w / B``: the gradient a passive party receives from a linear
    binary head (the mean loss over the batch).
    """
    logits = embeddings @ weight
    residual = torch.sigmoid(logits) - labels.to(embeddings.dtype)
    return residual[:, None] * weight[None, :] / len(embeddings)


def feed_batches(
    attack: Attack,
    ids: torch.Tensor,
    rows: torch.Tensor,
    *,
    kind: str,
    party: int = 1,
    batch: int = 64,
) -> None:
    """Deliver ``rows`` (one per id) to ``attack`` in batches, as its role's observer would."""
    for round_, start in enumerate(range(0, len(ids), batch)):
        chunk = ids[start : start + batch]
        delivery = Delivery(
            round_, "train", kind, (party,), ids=chunk.clone(), tensor=rows[chunk].clone()
        )
        attack.observe(delivery)


def known_positives(labels: torch.Tensor, count: int) -> KnownLabels:
    """The first ``count`` positive samples, labelled."""
    ids = torch.nonzero(labels == 1).flatten()[:count]
    return KnownLabels(ids, labels[ids].clone())
