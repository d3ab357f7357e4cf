"""Shared fixtures: tiny synthetic vertical data and models built from a seed."""

from __future__ import annotations

import pytest
import torch
from hypothesis import settings

from vfl.data.vertical import VerticalData
from vfl.models import MLP, ConcatHead
from vfl.results.metrics import Task

# No per-example wall-clock deadline: on a loaded two-core CI machine, and on the first call of a
# compiled kernel, the time measures the machine, not the code, and failed correct examples.
settings.register_profile("vfl", deadline=None)
settings.load_profile("vfl")


def make_vertical_data(
    *,
    num_train: int = 256,
    num_test: int = 64,
    widths: tuple[int, ...] = (3, 5),
    num_classes: int = 2,
    seed: int = 0,
) -> VerticalData:
    """Gaussian features split among parties; labels from a fixed linear rule."""
    generator = torch.Generator().manual_seed(seed)
    total = sum(widths)
    weights = torch.randn(total, num_classes, generator=generator)

    def split(n: int) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
        features = torch.randn(n, total, generator=generator)
        labels = (features @ weights).argmax(dim=1)
        return tuple(torch.split(features, list(widths), dim=1)), labels

    train_blocks, train_labels = split(num_train)
    test_blocks, test_labels = split(num_test)
    return VerticalData(
        tuple(b.contiguous() for b in train_blocks),
        tuple(b.contiguous() for b in test_blocks),
        train_labels,
        test_labels,
        Task(num_classes),
    )


def make_models(
    data: VerticalData, *, embedding_dim: int = 4, seed: int = 0
) -> tuple[list[torch.nn.Module], torch.nn.Module]:
    """MLP bottoms and a concatenating linear head for ``data``."""
    torch.manual_seed(seed)
    bottoms: list[torch.nn.Module] = [
        MLP(block.shape[1], [8], embedding_dim) for block in data.train_blocks
    ]
    head = ConcatHead(MLP(embedding_dim * data.num_parties, [], data.task.output_dim))
    return bottoms, head


@pytest.fixture
def vertical_data() -> VerticalData:
    return make_vertical_data()
