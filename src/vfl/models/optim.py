"""Optimizers: every role builds its own over its own parameters; per-round learning rates."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch import nn

OptimizerFactory = Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer]
"""Builds an optimizer over the given parameters (how users plug in their own)."""


OPTIMIZERS = ("sgd", "adam")


def optimizer_factory(
    name: str,
    *,
    lr: float,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    fused: bool = True,
) -> OptimizerFactory:
    """A factory building the optimizer ``name`` (``sgd`` or ``adam``) with these settings."""
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; valid: {', '.join(OPTIMIZERS)}")

    def build(params: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
        if name == "sgd":
            return torch.optim.SGD(
                params, lr=lr, momentum=momentum, weight_decay=weight_decay, fused=fused
            )
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, fused=fused)

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
