"""A party's LVFL state: its ratio schedules, progressive pruning, and per-round compute records.

LVFL (Wang et al., "Computation and Communication Efficient Lightweighting Vertical
Federated Learning", sections IV and V): at the start of round ``t`` party ``k`` prunes its
bottom model to ``α_k^t`` when that exceeds every earlier ratio (``vfl.prune``), and zeroes the
fraction ``β_k^t`` of its upload (``vfl.compress.sparsify``, applied by the party's uplink codec).
Every round it records what its model cost: parameters, forward FLOPs per sample, training FLOPs
and measured compute seconds.

Training FLOPs of a round are ``(forwards + 2·backwards)·B·f`` on ``B`` samples, ``f`` forward
FLOPs per sample (a multiply-add counts 2), a backward costing about two forwards (gradients of
weights and of inputs). With labels private to the server, Q local steps take Q forwards (the first
is the upload's) and Q backwards: ``3·Q·B·f``. With shared labels every local step recomputes the
party's own embedding: Q + 1 forwards and Q backwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import torch
from torch import nn

from vfl.errors import ConfigError
from vfl.models.device import model_device
from vfl.prune.flops import count_params, flops_per_sample
from vfl.prune.optimizer import rebuild_optimizer
from vfl.prune.progressive import ProgressivePruner
from vfl.results.compute import RoundCompute
from vfl.schedules import Schedule

BACKWARD_COST = 2
"""FLOPs of a backward pass, in forwards."""


class Lightweighting:
    """One party's schedules, pruner and compute log.

    Args:
        alpha: Its pruning ratio per round.
        beta: Its upload sparsification ratio per round (applied by the uplink codec; recorded
            here).
        after_upload: Prune after the round's upload (``lightweight.prune_at``) rather than
            before it.
    """

    def __init__(
        self, alpha: Schedule[float], beta: Schedule[float], *, after_upload: bool = False
    ) -> None:
        self.alpha = alpha
        self.beta = beta
        self.after_upload = after_upload
        self.pruner: ProgressivePruner | None = None
        self.log: list[RoundCompute] = []
        self._cost: tuple[int, int] | None = None  # (params, flops/sample) of the current model

    @property
    def max_alpha(self) -> float:
        """The largest pruning ratio applied so far."""
        return 0.0 if self.pruner is None else self.pruner.max_ratio

    def start_round(
        self, model: nn.Module, optimizer: torch.optim.Optimizer, round_: int
    ) -> tuple[nn.Module, torch.optim.Optimizer]:
        """Prune for round ``round_`` if its ratio exceeds every earlier one.

        Returns:
            The model and optimizer to train with from now on: new, smaller ones after a prune
            (the optimizer keeps the kept units' state), else the ones given.
        """
        ratio = self.alpha.value_at(round_)
        if ratio <= self.max_alpha:
            return model, optimizer
        if self.pruner is None:
            self.pruner = ProgressivePruner.for_model(model)
        pruned = self.pruner.step(model, ratio)
        if pruned is None:
            return model, optimizer
        self._cost = None
        pruned.model.to(model_device(model))
        return pruned.model, rebuild_optimizer(optimizer, model, pruned)

    def record(
        self,
        round_: int,
        model: nn.Module,
        *,
        input_shape: Sequence[int],
        samples: int,
        forwards: int,
        backwards: int,
        seconds: float,
    ) -> RoundCompute:
        """Log round ``round_``: passes over ``samples`` rows, ``seconds`` measured."""
        params, flops = self._model_cost(model, input_shape)
        entry = RoundCompute(
            round=round_,
            alpha=self.max_alpha,
            beta=self.beta.value_at(round_),
            params=params,
            flops_per_sample=flops,
            train_flops=(forwards + BACKWARD_COST * backwards) * samples * flops
            if flops >= 0
            else -1,
            compute_seconds=seconds,
        )
        self.log.append(entry)
        return entry

    def total_train_flops(self) -> int:
        """Training FLOPs over every logged round (-1 if any round's are unknown)."""
        if any(entry.train_flops < 0 for entry in self.log):
            return -1
        return sum(entry.train_flops for entry in self.log)

    def _model_cost(self, model: nn.Module, input_shape: Sequence[int]) -> tuple[int, int]:
        if self._cost is None:
            try:
                flops = flops_per_sample(model, input_shape)
            except ConfigError:
                flops = -1
            self._cost = (count_params(model), flops)
        return self._cost

    def state_dict(self) -> dict[str, Any]:
        """The pruner's state and the compute log, for checkpoints."""
        return {
            "pruner": None if self.pruner is None else self.pruner.state_dict(),
            "log": [asdict(entry) for entry in self.log],
        }

    def restore(
        self,
        state: dict[str, Any],
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
    ) -> tuple[nn.Module, torch.optim.Optimizer]:
        """Load ``state`` and shrink a freshly built ``model`` to the checkpoint's widths.

        Returns:
            The model and optimizer to load the checkpoint's weights and optimizer state into.
        """
        self.log = [RoundCompute(**entry) for entry in state["log"]]
        self._cost = None
        if state["pruner"] is None:
            self.pruner = None
            return model, optimizer
        self.pruner = ProgressivePruner.for_model(model)
        self.pruner.load_state_dict(state["pruner"])
        pruned = self.pruner.restore(model)
        pruned.model.to(model_device(model))
        return pruned.model, rebuild_optimizer(optimizer, model, pruned)
