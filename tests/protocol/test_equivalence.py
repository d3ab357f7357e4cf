"""VFL through the serializing transport computes exactly what the centralized model computes."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pytest
import torch
from torch import nn

from tests.conftest import make_models, make_vertical_data
from vfl.data.vertical import VerticalData
from vfl.models import MLP, SmallCNN, SumHead
from vfl.results.metrics import Task
from vfl.run.api import clone_modules, simulate

Factory = Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer]
OPTIMIZERS: dict[str, Factory] = {
    "sgd-momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
    "adam": lambda p: torch.optim.Adam(p, lr=1e-2),
}


def train_vfl_and_centralized(
    data: VerticalData, bottoms: list[nn.Module], head: nn.Module, optimizer: Factory
) -> tuple[nn.ModuleList, nn.ModuleList, int]:
    """One epoch of each protocol from the same weights and batch order."""
    central_bottoms, central_head = clone_modules(bottoms, head)
    vfl_run = simulate(data, bottoms=bottoms, head=head, optimizer=optimizer, batch_size=32)
    central_run = simulate(
        data,
        bottoms=central_bottoms,
        head=central_head,
        optimizer=optimizer,
        batch_size=32,
        centralized=True,
    )
    vfl_run.trainer.train_epoch(0)
    central_run.trainer.train_epoch(0)
    assert vfl_run.trainer.rounds == central_run.trainer.rounds
    return (
        nn.ModuleList([*bottoms, head]),
        nn.ModuleList([*central_bottoms, central_head]),
        vfl_run.trainer.rounds,
    )


def max_gap(a: Iterable[torch.Tensor], b: Iterable[torch.Tensor]) -> float:
    return max((x - y).abs().max().item() for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_twenty_vfl_steps_match_centralized_training(optimizer: str) -> None:
    # Prepare: 640 samples / batch 32 = 20 rounds
    data = make_vertical_data(num_train=640, widths=(3, 5, 2), num_classes=3)
    bottoms, head = make_models(data)
    initial = [p.detach().clone() for p in nn.ModuleList([*bottoms, head]).parameters()]

    # Execute
    vfl_model, central_model, rounds = train_vfl_and_centralized(
        data, bottoms, head, OPTIMIZERS[optimizer]
    )

    # Assert
    assert rounds == 20
    assert max_gap(vfl_model.parameters(), central_model.parameters()) <= 1e-5
    assert max_gap(vfl_model.parameters(), initial) > 1e-2  # training really moved the weights


def test_equivalence_holds_for_cnn_bottoms_and_a_sum_head() -> None:
    # Prepare: 4 parties with 1x6x6 image blocks; 160 samples / 32 = 5 rounds
    generator = torch.Generator().manual_seed(1)
    blocks = tuple(torch.rand(160, 1, 6, 6, generator=generator) for _ in range(4))
    labels = torch.randint(0, 4, (160,), generator=generator)
    data = VerticalData(blocks, blocks, labels, labels, Task(4))
    torch.manual_seed(3)
    bottoms: list[nn.Module] = [SmallCNN(1, 6, 6, 8, channels=(4, 4)) for _ in range(4)]
    head = SumHead(MLP(8, [6], 4))
    initial = [p.detach().clone() for p in nn.ModuleList([*bottoms, head]).parameters()]

    # Execute
    vfl_model, central_model, _ = train_vfl_and_centralized(data, bottoms, head, OPTIMIZERS["adam"])

    # Assert
    assert max_gap(vfl_model.parameters(), central_model.parameters()) <= 1e-5
    assert max_gap(vfl_model.parameters(), initial) > 1e-3


def test_evaluation_matches_between_protocols() -> None:
    # Prepare
    data = make_vertical_data(num_train=128, num_test=50)
    bottoms, head = make_models(data)
    central_bottoms, central_head = clone_modules(bottoms, head)
    optimizer = OPTIMIZERS["adam"]
    vfl_run = simulate(data, bottoms=bottoms, head=head, optimizer=optimizer)
    central_run = simulate(
        data, bottoms=central_bottoms, head=central_head, optimizer=optimizer, centralized=True
    )

    # Execute
    vfl_metrics = vfl_run.trainer.evaluate(1)
    central_metrics = central_run.trainer.evaluate(1)

    # Assert
    assert vfl_metrics.keys() == {"loss", "accuracy", "f1", "auc"}
    for name, value in vfl_metrics.items():
        assert value == pytest.approx(central_metrics[name], abs=1e-6)
