"""A party's LVFL state: its ratio schedules, progressive pruning, and per-round compute records.

LVFL (spec ``fedbcd-lvfl.md`` sections 2 and 3): at the start of round ``t`` party ``k`` prunes its
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

import csv
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
from torch import nn

from vfl.config import LightweightConfig
from vfl.errors import ConfigError
from vfl.prune import ProgressivePruner, RatioSchedule, flops_per_sample, make_schedule
from vfl.prune.flops import count_params
from vfl.prune.optimizer import rebuild_optimizer

BACKWARD_COST = 2
"""FLOPs of a backward pass, in forwards."""


@dataclass(frozen=True)
class RoundCompute:
    """What one party's bottom model cost in one round.

    Attributes:
        round: The round.
        alpha: The pruning ratio reached so far (the largest ``α_k^t`` up to this round).
        beta: The fraction of this round's upload zeroed.
        params: Parameters of the bottom model.
        flops_per_sample: Forward FLOPs for one sample (-1 when the model's layers are not ones
            the counter knows, e.g. a user's custom module).
        train_flops: ``(forwards + 2·backwards)·B·flops_per_sample`` (-1 when unknown).
        compute_seconds: Measured time in the party's forward and local steps.
    """

    round: int
    alpha: float
    beta: float
    params: int
    flops_per_sample: int
    train_flops: int
    compute_seconds: float


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
        self, alpha: RatioSchedule, beta: RatioSchedule, *, after_upload: bool = False
    ) -> None:
        self.alpha = alpha
        self.beta = beta
        self.after_upload = after_upload
        self.pruner: ProgressivePruner | None = None
        self.log: list[RoundCompute] = []
        self._cost: tuple[int, int] | None = None  # (params, flops/sample) of the current model

    @classmethod
    def from_config(cls, config: LightweightConfig, party: int) -> Lightweighting:
        """Party ``party``'s schedules from the ``[lightweight]`` table."""
        alpha, beta = config.schedules_of(party)
        return cls(
            make_schedule(alpha.spec(), name=f"lightweight alpha of party {party}"),
            make_schedule(beta.spec(), name=f"lightweight beta of party {party}"),
            after_upload=config.prune_at == "after_upload",
        )

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
        return pruned.model, rebuild_optimizer(optimizer, model, pruned)


def summarize_compute(logs: dict[int, list[RoundCompute]]) -> dict[str, Any]:
    """Per-party and total compute over a run, for ``summary.json``."""
    parties: dict[str, Any] = {}
    for party, log in logs.items():
        if not log:
            continue
        flops = [entry.train_flops for entry in log]
        last = log[-1]
        parties[str(party)] = {
            "rounds": len(log),
            "train_flops": sum(flops) if min(flops) >= 0 else None,
            "compute_seconds": math.fsum(entry.compute_seconds for entry in log),
            "final_params": last.params,
            "final_flops_per_sample": last.flops_per_sample if last.flops_per_sample >= 0 else None,
            "initial_params": log[0].params,
            "final_alpha": last.alpha,
        }
    known = [p["train_flops"] for p in parties.values()]
    return {
        "parties": parties,
        "train_flops": sum(known) if known and None not in known else None,
        "compute_seconds": math.fsum(p["compute_seconds"] for p in parties.values()),
    }


def write_compute_csv(path: Path, logs: dict[int, list[RoundCompute]]) -> None:
    """One row per party and round: ``party`` then the ``RoundCompute`` fields."""
    names = [f.name for f in fields(RoundCompute)]
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["party", *names])
        for party, log in sorted(logs.items()):
            for entry in log:
                row = asdict(entry)
                writer.writerow([party, *(row[name] for name in names)])
