"""Per-round compute records of the parties' bottom models, and their totals for a run."""

from __future__ import annotations

import csv
import math
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any


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
    temporary = path.with_name(path.name + ".tmp")  # whole or not at all: never a cut file
    with temporary.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["party", *names])
        for party, log in sorted(logs.items()):
            for entry in log:
                row = asdict(entry)
                writer.writerow([party, *(row[name] for name in names)])
    os.replace(temporary, path)
