"""Passive model completion (Fu et al., USENIX Security 2022).

Fu et al., "Label Inference Attacks Against Vertical Federated Learning".
A passive party's trained bottom model already maps its features to a representation the label
holder's head can classify. With the labels of a few training samples (Fu et al. use a few per
class, e.g. 40 in all), it trains a head of its own on its bottom's embeddings of those samples and
labels every other sample it holds. Fu et al. fine-tune bottom and head with MixMatch, a
semi-supervised method that also uses the unlabelled rows; this implementation keeps the bottom
fixed and trains the head on the labelled rows alone (plain cross-entropy, full-batch Adam): a
simpler variant, which their semi-supervised training is expected to improve on.
"""

from __future__ import annotations

import torch
from torch import nn

from vfl.attacks.base import Attack, Inference, Knowledge, KnownLabels, PartyKnowledge
from vfl.models.device import model_device


class ModelCompletion(Attack):
    """A head trained on the party's own bottom embeddings of a few labelled samples.

    Args:
        known: The labelled samples.
        hidden: Hidden widths of the head (empty: a linear head).
        epochs: Full-batch Adam steps.
        lr: Adam's learning rate.
    """

    name = "model_completion"
    role = "party"

    def __init__(
        self, known: KnownLabels, *, hidden: tuple[int, ...], epochs: int, lr: float
    ) -> None:
        self.known, self.hidden, self.epochs, self.lr = known, hidden, epochs, lr

    def infer(self, own: Knowledge, *, seed: int) -> Inference:
        """Labels of every training row the party holds but was not told about."""
        assert isinstance(own, PartyKnowledge)
        embeddings = _standardized(_embed(own.model, own.train_features))
        torch.manual_seed(seed)
        head = _mlp(embeddings.shape[1], self.hidden, own.num_classes)
        optimizer = torch.optim.Adam(head.parameters(), lr=self.lr)
        inputs, targets = embeddings[self.known.ids], self.known.labels
        for _ in range(self.epochs):
            optimizer.zero_grad()
            torch.autograd.backward(nn.functional.cross_entropy(head(inputs), targets))
            optimizer.step()
        unknown = torch.ones(len(embeddings), dtype=torch.bool)
        unknown[self.known.ids] = False
        ids = torch.nonzero(unknown).flatten()
        with torch.no_grad():
            labels = head(embeddings[ids]).argmax(dim=1)
        return Inference(ids, labels=labels)


@torch.no_grad()
def _embed(model: nn.Module, features: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
    model.eval()
    device = model_device(model)
    parts = [
        model(features[start : start + chunk].to(device))
        for start in range(0, len(features), chunk)
    ]
    return torch.cat(parts).reshape(len(features), -1).to(device="cpu", dtype=torch.float32)


def _standardized(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean(dim=0)) / x.std(dim=0).clamp_min(1e-6)


def _mlp(inputs: int, hidden: tuple[int, ...], outputs: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for width in hidden:
        layers += [nn.Linear(inputs, width), nn.ReLU()]
        inputs = width
    return nn.Sequential(*layers, nn.Linear(inputs, outputs))
