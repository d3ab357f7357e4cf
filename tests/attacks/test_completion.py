"""Model completion: a few labels complete a bottom that separates the classes; not one that
does not."""

from __future__ import annotations

import torch

from vfl.attacks import KnownLabels, PartyKnowledge
from vfl.attacks.completion import ModelCompletion
from vfl.attacks.scoring import Truth, score


def _blobs(
    rows: int, classes: int, *, spread: float, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian blobs around ``classes`` random centres; ``spread`` is their noise."""
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(classes, 8, generator=generator) * 4
    labels = torch.arange(rows) % classes
    features = centres[labels] + spread * torch.randn(rows, 8, generator=generator)
    return features, labels


def _first_per_class(labels: torch.Tensor, per_class: int, classes: int) -> KnownLabels:
    ids = torch.cat([torch.nonzero(labels == c).flatten()[:per_class] for c in range(classes)])
    ids = ids.sort().values
    return KnownLabels(ids, labels[ids].clone())


def test_forty_labels_complete_a_bottom_whose_embeddings_separate_the_classes() -> None:
    # Prepare: the party's bottom is a fixed random linear map of separable blobs
    features, labels = _blobs(2000, 10, spread=0.5, seed=0)
    torch.manual_seed(0)
    bottom = torch.nn.Linear(8, 16)
    own = PartyKnowledge(1, features, bottom, num_classes=10)
    attack = ModelCompletion(_first_per_class(labels, 4, 10), hidden=(), epochs=300, lr=1e-2)

    # Execute
    metrics = score(attack.infer(own, seed=0), Truth(labels, 10))

    # Assert
    assert metrics["attack_accuracy"] > 0.95
    assert abs(metrics["attack_accuracy_prior"] - 0.1) < 0.01


def test_a_bottom_that_ignores_the_features_completes_to_chance() -> None:
    # Prepare: the negative control: the embeddings are noise independent of the rows
    features, labels = _blobs(2000, 10, spread=0.5, seed=1)

    class Noise(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.randn(len(x), 16, generator=torch.Generator().manual_seed(len(x)))

    own = PartyKnowledge(1, features, Noise(), num_classes=10)
    attack = ModelCompletion(_first_per_class(labels, 4, 10), hidden=(), epochs=300, lr=1e-2)

    # Execute
    metrics = score(attack.infer(own, seed=0), Truth(labels, 10))

    # Assert: 10 balanced classes: chance is 0.1
    assert metrics["attack_accuracy"] < 0.2


def test_completion_labels_only_the_samples_it_was_not_told() -> None:
    # Prepare
    features, labels = _blobs(300, 3, spread=0.5, seed=2)
    known = _first_per_class(labels, 2, 3)
    attack = ModelCompletion(known, hidden=(8,), epochs=20, lr=1e-2)

    # Execute
    inference = attack.infer(PartyKnowledge(1, features, torch.nn.Identity(), 3), seed=0)

    # Assert
    assert inference.labels is not None
    assert len(inference.ids) == 300 - 6
    assert not torch.isin(inference.ids, known.ids).any()
