"""Models, inputs and the masked-original reference shared by the pruning tests.

The reference is written independently of ``vfl.prune``: it zeroes the removed units' weight
rows and biases in a copy of the ORIGINAL model, which (for activations with f(0) = 0) makes
those units output zero: LVFL's θ̂ = θ ⊙ m.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping

import torch
from torch import nn

from vfl.models import MLP
from vfl.models.bottom import SmallCNN
from vfl.seeding import torch_seed


def custom_sequential() -> nn.Module:
    """Strided conv, average pooling, a 1x1 conv, LeakyReLU and tanh: input (3, 9, 9)."""
    return nn.Sequential(
        nn.Conv2d(3, 6, kernel_size=3, stride=2, padding=1),  # (6, 5, 5)
        nn.ReLU(),
        nn.AvgPool2d(2),  # (6, 2, 2)
        nn.Conv2d(6, 5, kernel_size=1),  # (5, 2, 2)
        nn.LeakyReLU(),
        nn.Flatten(),
        nn.Linear(20, 7),
        nn.Tanh(),
        nn.Linear(7, 3),
    )


# name -> (builder, one sample's input shape)
MODELS: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]] = {
    "mlp": (lambda: MLP(12, [16, 10], 4), (12,)),
    "mlp-gelu-tanh-out": (
        lambda: MLP(12, [9], 4, activation_name="gelu", output_activation="tanh"),
        (3, 4),
    ),
    "cnn": (lambda: SmallCNN(1, 8, 8, 5, channels=(6, 7)), (1, 8, 8)),
    "cnn-hidden": (lambda: SmallCNN(2, 9, 7, 5, channels=(5, 6), hidden=(11, 7)), (2, 9, 7)),
    "sequential": (custom_sequential, (3, 9, 9)),
}


def build(name: str, seed: int = 0) -> nn.Module:
    """A model from ``MODELS``, initialised from ``seed`` without touching the global RNG."""
    with torch_seed(seed):
        return MODELS[name][0]()


def inputs(name: str, batch: int = 5, seed: int = 1) -> torch.Tensor:
    """A random batch for the model ``name``."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(batch, *MODELS[name][1], generator=generator)


def masked_original(model: nn.Module, kept: Mapping[str, torch.Tensor]) -> nn.Module:
    """A copy of ``model`` whose units not in ``kept[layer]`` have zero weight rows and biases."""
    masked = copy.deepcopy(model)
    layers = dict(masked.named_modules())
    with torch.no_grad():
        for name, units in kept.items():
            layer = layers[name]
            assert isinstance(layer, nn.Linear | nn.Conv2d)
            removed = torch.ones(layer.weight.shape[0], dtype=torch.bool)
            removed[units] = False
            layer.weight[removed] = 0.0
            if layer.bias is not None:
                layer.bias[removed] = 0.0
    return masked


def l1_of_rows(layer: nn.Module) -> list[float]:
    """Each output unit's L1 norm, computed with plain Python loops."""
    assert isinstance(layer, nn.Linear | nn.Conv2d)
    rows = layer.weight.detach().reshape(layer.weight.shape[0], -1).tolist()
    return [sum(abs(v) for v in row) for row in rows]
