"""A bottom model seen as a chain of layers, the form structured pruning and FLOPs work on.

A model is supported when its forward pass applies its leaf modules one after the other:
``nn.Sequential`` and vfl's own ``MLP`` and ``SmallCNN`` (whose forwards compose their children
in registration order), nested in any way. The leaves must be ``nn.Linear``, ``nn.Conv2d``
(``groups=1``), an element-wise activation, dropout, ``nn.MaxPool2d`` / ``nn.AvgPool2d`` or
``nn.Flatten``. Anything else raises ``ConfigError``: a custom module's forward could reorder,
skip or merge its children, and pruning must know exactly which tensor feeds which layer.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from vfl.errors import ConfigError
from vfl.models.bottom import MLP, SmallCNN

SEQUENTIAL_CONTAINERS: tuple[type[nn.Module], ...] = (nn.Sequential, MLP, SmallCNN)
"""Modules whose forward applies their children in registration order."""

WEIGHTED_LAYERS = (nn.Linear, nn.Conv2d)
"""Layers with filters (Conv2d output channels) or neurons (Linear output units)."""

ELEMENTWISE_LAYERS: tuple[type[nn.Module], ...] = (
    nn.ReLU,
    nn.LeakyReLU,
    nn.ELU,
    nn.GELU,
    nn.SiLU,
    nn.Tanh,
    nn.Sigmoid,
    nn.Identity,
    nn.Dropout,
    nn.Dropout2d,
)
"""Layers that act on each value (or each whole channel) on its own, so channels pass through."""

POOLING_LAYERS: tuple[type[nn.Module], ...] = (nn.MaxPool2d, nn.AvgPool2d)
"""Pooling within each channel: the channel count passes through."""


@dataclass(frozen=True)
class Link:
    """One leaf of a chain.

    Attributes:
        name: The leaf's path in the model (as in ``named_modules``), e.g. ``"head.layers.1"``.
        module: The leaf itself.
    """

    name: str
    module: nn.Module


def layer_chain(model: nn.Module) -> list[Link]:
    """The model's leaves in the order its forward pass applies them.

    Raises:
        ConfigError: for a container whose forward order is unknown, or an unsupported leaf.
    """
    return list(_walk(model, ""))


def weighted_links(model: nn.Module) -> list[Link]:
    """The ``Linear`` and ``Conv2d`` leaves, in forward order."""
    return [link for link in layer_chain(model) if isinstance(link.module, WEIGHTED_LAYERS)]


def prunable_links(model: nn.Module) -> list[Link]:
    """Every weighted leaf except the last one, whose outputs are the embedding the server sees."""
    return weighted_links(model)[:-1]


def _walk(module: nn.Module, prefix: str) -> list[Link]:
    if isinstance(module, SEQUENTIAL_CONTAINERS):
        links: list[Link] = []
        for child_name, child in module.named_children():
            links.extend(_walk(child, f"{prefix}.{child_name}" if prefix else child_name))
        return links
    _check_leaf(module, prefix)
    return [Link(prefix, module)]


def _check_leaf(module: nn.Module, name: str) -> None:
    supported = WEIGHTED_LAYERS + ELEMENTWISE_LAYERS + POOLING_LAYERS + (nn.Flatten,)
    if not isinstance(module, supported):
        valid = ", ".join(kind.__name__ for kind in (*SEQUENTIAL_CONTAINERS, *supported))
        raise ConfigError(
            f"cannot prune or count layer {name or '<model>'!r} of type {type(module).__name__};"
            f" supported: {valid}"
        )
    if isinstance(module, nn.Conv2d) and module.groups != 1:
        raise ConfigError(
            f"cannot prune grouped convolution {name!r} (groups={module.groups}); only groups=1"
        )
