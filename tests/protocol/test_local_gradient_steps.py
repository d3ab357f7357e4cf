"""A passive party's Q local steps fetch the batch's rows lazily and once, and step exactly."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from vfl.roles.local import LocalSteps, gradient_steps


def model_and_optimizer() -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def by_hand(rows: torch.Tensor, grad: torch.Tensor, steps: int) -> list[torch.Tensor]:
    """Q steps of back-propagating ``grad`` through the current model, written out."""
    model, optimizer = model_and_optimizer()
    for _ in range(steps):
        optimizer.zero_grad()
        torch.autograd.backward(model(rows), grad)
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize(("steps", "fetches"), [(1, 0), (2, 1), (5, 1)])
def test_rows_are_fetched_only_when_a_step_recomputes_the_embedding(
    steps: int, fetches: int
) -> None:
    # Prepare
    rows = torch.randn(8, 5, generator=torch.Generator().manual_seed(1))
    grad = torch.randn(8, 3, generator=torch.Generator().manual_seed(2))
    model, optimizer = model_and_optimizer()
    first = model(rows)
    calls: list[int] = []

    def fetch() -> torch.Tensor:
        calls.append(1)
        return rows

    # Execute
    gradient_steps(
        model,
        optimizer,
        inputs=fetch,
        grad=grad,
        first_embedding=first,
        steps=LocalSteps(count=steps),
    )

    # Assert
    assert len(calls) == fetches
    for got, expected in zip(model.parameters(), by_hand(rows, grad, steps), strict=True):
        assert torch.equal(got.detach(), expected)
