"""EagerSGD and EagerAdam: torch's optimizers, step for step, without importing torch._dynamo."""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Callable

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from vfl.models.eager_optim import EagerAdam, EagerSGD
from vfl.models.optim import optimizer_factory

Build = Callable[..., torch.optim.Optimizer]
PAIRS: list[tuple[Build, Build, dict[str, object]]] = [
    (torch.optim.SGD, EagerSGD, {"lr": 0.1}),
    (torch.optim.SGD, EagerSGD, {"lr": 0.05, "momentum": 0.9, "weight_decay": 1e-3}),
    (torch.optim.SGD, EagerSGD, {"lr": 0.05, "momentum": 0.9, "fused": True}),
    (torch.optim.Adam, EagerAdam, {"lr": 1e-2}),
    (torch.optim.Adam, EagerAdam, {"lr": 1e-3, "weight_decay": 1e-2, "fused": True}),
]
EACH_PAIR = pytest.mark.parametrize(("torch_class", "eager_class", "settings_"), PAIRS)


def _model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 2))


def _train(model: nn.Module, optimizer: torch.optim.Optimizer, steps: int, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        optimizer.zero_grad()
        inputs = torch.randn(8, 5, generator=generator)
        model(inputs).square().mean().backward()
        optimizer.step()


@EACH_PAIR
@settings(deadline=None, max_examples=15)
@given(seed=st.integers(0, 2**16), steps=st.integers(1, 6))
def test_each_step_equals_torchs_bit_for_bit(
    torch_class: Build, eager_class: Build, settings_: dict[str, object], seed: int, steps: int
) -> None:
    # Prepare: the same model twice
    reference, eager = _model(seed), _model(seed)

    # Execute
    _train(reference, torch_class(reference.parameters(), **settings_), steps, seed)
    _train(eager, eager_class(eager.parameters(), **settings_), steps, seed)

    # Assert
    for expected, got in zip(reference.parameters(), eager.parameters(), strict=True):
        assert torch.equal(expected, got)


@EACH_PAIR
def test_state_dicts_load_across_the_two_classes(
    torch_class: Build, eager_class: Build, settings_: dict[str, object]
) -> None:
    # Prepare: torch's optimizer after some steps (a checkpoint written before EagerAdam existed)
    model = _model(0)
    reference = torch_class(model.parameters(), **settings_)
    _train(model, reference, 3, seed=1)
    twin = _model(0)
    twin.load_state_dict(model.state_dict())

    # Execute: the state goes into the eager class, both take the same further steps
    eager = eager_class(twin.parameters(), **settings_)
    eager.load_state_dict(copy.deepcopy(reference.state_dict()))  # as a checkpoint holds it
    _train(model, reference, 2, seed=2)
    _train(twin, eager, 2, seed=2)

    # Assert: same parameters, same state dict (tensors and hyper-parameters)
    for expected, got in zip(model.parameters(), twin.parameters(), strict=True):
        assert torch.equal(expected, got)
    expected_state, got_state = reference.state_dict(), eager.state_dict()
    assert expected_state["param_groups"] == got_state["param_groups"]
    for index, entry in expected_state["state"].items():
        for key, value in entry.items():
            assert torch.equal(
                torch.as_tensor(value), torch.as_tensor(got_state["state"][index][key])
            )


def test_vfls_optimizers_are_the_eager_ones() -> None:
    # Prepare
    params = list(_model(0).parameters())

    # Execute
    sgd = optimizer_factory("sgd", lr=0.1)(params)
    adam = optimizer_factory("adam", lr=0.1)(params)

    # Assert
    assert type(sgd) is EagerSGD and type(adam) is EagerAdam


USE_OPTIMIZER = (
    "import sys, torch\n"
    "from vfl.models import eager_optim\n"
    "build = getattr(torch.optim, sys.argv[1], None) or getattr(eager_optim, sys.argv[1])\n"
    "model = torch.nn.Linear(3, 1)\n"
    "optimizer = build(model.parameters(), lr=0.1)\n"
    "model(torch.ones(2, 3)).sum().backward()\n"
    "optimizer.step()\n"
    "optimizer.zero_grad()\n"
    "optimizer.load_state_dict(optimizer.state_dict())\n"
    "print('torch._dynamo' in sys.modules)\n"
)


@pytest.mark.parametrize(
    ("name", "imports_dynamo"),
    [
        ("EagerSGD", False),
        ("EagerAdam", False),
        ("Adam", True),  # the control: torch's own optimizer, seen by the same check
    ],
)
def test_the_eager_optimizers_never_import_torch_dynamo(name: str, imports_dynamo: bool) -> None:
    # Execute: a fresh interpreter, where nothing else has imported it
    done = subprocess.run(
        [sys.executable, "-c", USE_OPTIMIZER, name], capture_output=True, text=True, check=True
    )

    # Assert
    assert done.stdout.strip() == str(imports_dynamo)
