"""Optimizers from config: every role builds its own over its own parameters."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from vfl.config import OptimizerConfig

OptimizerFactory = Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer]
"""Builds an optimizer over the given parameters (how users plug in their own)."""


def optimizer_factory(config: OptimizerConfig) -> OptimizerFactory:
    """A factory building the configured optimizer."""

    def build(params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
        if config.name == "sgd":
            return torch.optim.SGD(
                params,
                lr=config.lr,
                momentum=config.momentum,
                weight_decay=config.weight_decay,
                fused=config.fused,
            )
        return torch.optim.Adam(
            params, lr=config.lr, weight_decay=config.weight_decay, fused=config.fused
        )

    return build
