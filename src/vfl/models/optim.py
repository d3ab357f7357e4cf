"""Optimizers from config: every role builds its own over its own parameters."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

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


@dataclass(frozen=True)
class LearningRateSchedule:
    """The learning rate of each round: constant, or eta0 / sqrt(t + 1) (FedBCD's schedule).

    The rate is constant within a round (C-VFL's eta^{t0}); ``t`` is the round index.

    Example:
        >>> LearningRateSchedule(0.1, "inverse_sqrt").at(3)
        0.05
    """

    base: float
    kind: str = "constant"

    def __post_init__(self) -> None:
        if self.kind not in ("constant", "inverse_sqrt"):
            raise ValueError(
                f"schedule kind must be 'constant' or 'inverse_sqrt', not {self.kind!r}"
            )

    def at(self, round_: int) -> float:
        """The learning rate of round ``round_`` (0-based)."""
        if self.kind == "inverse_sqrt":
            return self.base / math.sqrt(round_ + 1)
        return self.base

    def apply(self, optimizer: torch.optim.Optimizer, round_: int) -> None:
        """Set every parameter group's learning rate for round ``round_``."""
        rate = self.at(round_)
        for group in optimizer.param_groups:
            group["lr"] = rate
