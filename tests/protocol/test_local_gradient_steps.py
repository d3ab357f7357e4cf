"""A passive party's Q local steps fetch the batch's rows lazily and once, and step exactly."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from vfl.roles.local import LocalSteps, back_propagate, gradient_steps


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


@settings(deadline=None, max_examples=30)
@given(
    seed=st.integers(0, 2**16),
    rows=st.integers(1, 16),
    scale=st.sampled_from([1e-6, 1.0, 1e6]),
)
def test_back_propagate_gives_the_gradients_torch_does_bit_for_bit(
    seed: int, rows: int, scale: float
) -> None:
    # Prepare: one model twice, a batch and a seed gradient
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(rows, 5, generator=generator)
    seed_grad = torch.randn(rows, 3, generator=generator) * scale
    by_torch, by_vfl = model_and_optimizer()[0], model_and_optimizer()[0]

    # Execute
    torch.autograd.backward(by_torch(inputs), seed_grad)
    back_propagate(by_vfl(inputs), seed_grad)

    # Assert
    for expected, got in zip(by_torch.parameters(), by_vfl.parameters(), strict=True):
        assert expected.grad is not None and got.grad is not None
        assert torch.equal(expected.grad, got.grad)


def test_back_propagate_refuses_a_seed_of_another_shape() -> None:
    # Prepare
    model = model_and_optimizer()[0]

    # Execute / Assert: torch would broadcast the product; the shapes are named instead
    with pytest.raises(ValueError, match=r"shape \(8, 1\) cannot seed an output of shape \(8, 3\)"):
        back_propagate(model(torch.ones(8, 5)), torch.ones(8, 1))


SEEDED_BACKWARD = (
    "import sys, torch\n"
    "from vfl.roles.local import back_propagate\n"
    "output = torch.nn.Linear(3, 2)(torch.ones(4, 3))\n"
    "seed = torch.ones(4, 2)\n"
    "run = back_propagate if sys.argv[1] == 'vfl' else torch.autograd.backward\n"
    "run(output, seed)\n"
    "print('sympy' in sys.modules)\n"
)


@pytest.mark.parametrize(
    ("by", "imports_sympy"),
    [("vfl", False), ("torch", True)],  # torch's own call is the control, seen by the same check
)
def test_back_propagate_imports_no_symbolic_shapes(by: str, imports_sympy: bool) -> None:
    # Execute: a fresh interpreter, where nothing else has imported them
    done = subprocess.run(
        [sys.executable, "-c", SEEDED_BACKWARD, by], capture_output=True, text=True, check=True
    )

    # Assert
    assert done.stdout.strip() == str(imports_sympy)
