from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import pytest
import torch
from torch import nn

from tests.prune.models import build, inputs, masked_original
from vfl.errors import ConfigError
from vfl.models import MLP
from vfl.prune import prune_model, rebuild_optimizer, slice_optimizer_state

OptimizerFactory = Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer]

OPTIMIZERS: dict[str, OptimizerFactory] = {
    "sgd-momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-3),
    "adam": lambda p: torch.optim.Adam(p, lr=0.02, betas=(0.8, 0.99), fused=False),
    "adam-fused": lambda p: torch.optim.Adam(p, lr=0.02, fused=True),
}
MODEL_NAMES = ["mlp", "cnn-hidden"]


def _step(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor) -> None:
    optimizer.zero_grad()
    model(x).square().mean().backward()
    optimizer.step()


def _trained(
    name: str, factory: OptimizerFactory, steps: int = 3
) -> tuple[nn.Module, torch.optim.Optimizer]:
    model = build(name)
    optimizer = factory(model.parameters())
    for seed in range(steps):
        _step(model, optimizer, inputs(name, seed=10 + seed))
    return model, optimizer


def _remask(model: nn.Module, kept: Mapping[str, torch.Tensor]) -> nn.Module:
    """Zero the removed units again: their stale moments moved them, nothing else."""
    return masked_original(model, kept)


@pytest.mark.parametrize("optimizer_name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_training_continues_from_the_same_moments_for_the_kept_units(
    name: str, optimizer_name: str
) -> None:
    # Prepare: a trained model with optimizer state, and its masked twin sharing that state
    factory = OPTIMIZERS[optimizer_name]
    model, optimizer = _trained(name, factory)
    pruned = prune_model(model, 0.5)
    masked = masked_original(model, pruned.units)
    masked_optimizer = factory(masked.parameters())
    masked_optimizer.load_state_dict(optimizer.state_dict())
    x = inputs(name, seed=99)

    # Execute
    rebuilt = rebuild_optimizer(optimizer, model, pruned)
    _step(pruned.model, rebuilt, x)
    _step(masked, masked_optimizer, x)

    # Assert
    expected = _remask(masked, pruned.units)(x)
    torch.testing.assert_close(pruned.model(x), expected, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("optimizer_name", sorted(OPTIMIZERS))
def test_a_fresh_optimizer_would_not_match(optimizer_name: str) -> None:
    # Prepare: the same scenario, but dropping the state (shows the test above can fail)
    factory = OPTIMIZERS[optimizer_name]
    model, optimizer = _trained("mlp", factory)
    pruned = prune_model(model, 0.5)
    masked = masked_original(model, pruned.units)
    masked_optimizer = factory(masked.parameters())
    masked_optimizer.load_state_dict(optimizer.state_dict())
    x = inputs("mlp", seed=99)

    # Execute
    _step(pruned.model, factory(pruned.model.parameters()), x)
    _step(masked, masked_optimizer, x)

    # Assert
    assert not torch.allclose(pruned.model(x), _remask(masked, pruned.units)(x), atol=1e-4)


@pytest.mark.parametrize("optimizer_name", sorted(OPTIMIZERS))
def test_state_tensors_are_the_kept_slices_and_hyperparameters_stay(optimizer_name: str) -> None:
    # Prepare
    model, optimizer = _trained("cnn-hidden", OPTIMIZERS[optimizer_name])
    pruned = prune_model(model, 0.5)
    old_params = dict(model.named_parameters())

    # Execute
    rebuilt = rebuild_optimizer(optimizer, model, pruned)

    # Assert
    assert type(rebuilt) is type(optimizer)
    assert rebuilt.defaults == optimizer.defaults
    old_group = {k: v for k, v in optimizer.param_groups[0].items() if k != "params"}
    assert {k: v for k, v in rebuilt.param_groups[0].items() if k != "params"} == old_group
    conv = "features.3.weight"  # both its filters and its input channels shrank
    old_state = optimizer.state[old_params[conv]]
    new_state = rebuilt.state[dict(pruned.model.named_parameters())[conv]]
    outputs, channels = pruned.units["features.3"], pruned.units["features.0"]
    for key, value in old_state.items():
        if value.shape == old_params[conv].shape:
            assert torch.equal(new_state[key], value[outputs][:, channels])
        else:
            assert torch.equal(new_state[key], value)  # the step counter


def test_parameter_groups_keep_their_order_and_settings() -> None:
    # Prepare: two groups with different learning rates
    model = build("mlp")
    layers = dict(model.named_modules())
    optimizer = torch.optim.SGD(
        [
            {"params": layers["layers.1"].parameters(), "lr": 0.5},
            {"params": [*layers["layers.3"].parameters(), *layers["layers.5"].parameters()]},
        ],
        lr=0.01,
        momentum=0.5,
    )
    _step(model, optimizer, inputs("mlp"))
    pruned = prune_model(model, 0.5)

    # Execute
    rebuilt = rebuild_optimizer(optimizer, model, pruned)

    # Assert
    new = dict(pruned.model.named_parameters())
    assert [g["lr"] for g in rebuilt.param_groups] == [0.5, 0.01]
    assert rebuilt.param_groups[0]["params"] == [new["layers.1.weight"], new["layers.1.bias"]]


def test_slice_optimizer_state_leaves_the_old_optimizer_intact() -> None:
    # Prepare
    model, optimizer = _trained("mlp", OPTIMIZERS["adam"])
    before = {
        i: {k: v.clone() for k, v in s.items()} for i, s in optimizer.state_dict()["state"].items()
    }
    pruned = prune_model(model, 0.5)

    # Execute
    state = slice_optimizer_state(optimizer, model, pruned)

    # Assert
    assert isinstance(pruned.model, MLP)
    first_linear = pruned.model.layers[1]
    assert isinstance(first_linear, nn.Linear)
    assert state["state"][0]["exp_avg"].shape == first_linear.weight.shape
    for index, entry in optimizer.state_dict()["state"].items():
        for key, value in entry.items():
            assert torch.equal(value, before[index][key])


def test_an_optimizer_over_other_parameters_is_refused() -> None:
    # Prepare
    model = build("mlp")
    optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(3)), *model.parameters()], lr=0.1)

    # Execute / Assert
    with pytest.raises(ConfigError, match=r"shape \(3,\)"):
        rebuild_optimizer(optimizer, model, prune_model(model, 0.5))
