"""Optimizers: every role builds its own over its own parameters; per-round learning rates."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch import nn

from vfl.models.eager_optim import EagerAdam, EagerSGD

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
            return EagerSGD(
                params, lr=lr, momentum=momentum, weight_decay=weight_decay, fused=fused
            )
        return without_graph_capture_check(
            EagerAdam(params, lr=lr, weight_decay=weight_decay, fused=fused)
        )

    return build


_CAPTURE_CHECKS = ("_accelerator_graph_capture_health_check", "_cuda_graph_capture_health_check")


def without_graph_capture_check(optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
    """``optimizer`` without torch's check, on every step, for a CUDA graph being captured.

    The check asks the driver how many devices there are (``cudaGetDeviceCount``) on every
    ``step()`` of most of torch's optimizers (Adam among them; SGD has none) wherever torch was
    built with CUDA, even for a model on the CPU. vfl never captures CUDA graphs, so the
    question has one answer, and a run takes thousands of steps.
    """
    for name in _CAPTURE_CHECKS:
        if hasattr(optimizer, name):
            setattr(optimizer, name, _no_capture_to_check)
    return optimizer


def _no_capture_to_check() -> None:
    """Vfl captures no CUDA graph: nothing to check."""


SCHEDULES = ("constant", "inverse_sqrt", "step", "exponential")


@dataclass(frozen=True)
class LearningRateSchedule:
    """The learning rate of each round, constant within a round (C-VFL's eta^{t0}).

    Per round ``t``: ``constant``, or ``inverse_sqrt``: eta0 / sqrt(t + 1) (FedBCD's schedule).
    Per epoch ``e = t // rounds_per_epoch``: ``step``: eta0 * gamma^floor(e / step_epochs), and
    ``exponential``: eta0 * gamma^e.

    Example:
        >>> LearningRateSchedule(0.1, "inverse_sqrt").at(3)
        0.05
        >>> LearningRateSchedule(0.1, "step", gamma=0.5, step_epochs=2, rounds_per_epoch=10).at(45)
        0.025
    """

    base: float
    kind: str = "constant"
    gamma: float = 0.1
    step_epochs: int = 1
    rounds_per_epoch: int = 1

    def __post_init__(self) -> None:
        if self.kind not in SCHEDULES:
            raise ValueError(f"schedule kind must be one of {SCHEDULES}, not {self.kind!r}")
        if self.step_epochs < 1 or self.rounds_per_epoch < 1:
            raise ValueError(
                f"step_epochs and rounds_per_epoch must be >= 1, got {self.step_epochs} and"
                f" {self.rounds_per_epoch}"
            )

    def at(self, round_: int) -> float:
        """The learning rate of round ``round_`` (0-based)."""
        epoch = round_ // self.rounds_per_epoch
        if self.kind == "inverse_sqrt":
            return self.base / math.sqrt(round_ + 1)
        if self.kind == "step":
            return float(self.base * self.gamma ** (epoch // self.step_epochs))
        if self.kind == "exponential":
            return float(self.base * self.gamma**epoch)
        return self.base

    def apply(self, optimizer: torch.optim.Optimizer, round_: int) -> None:
        """Set every parameter group's learning rate for round ``round_``."""
        rate = self.at(round_)
        for group in optimizer.param_groups:
            group["lr"] = rate
