"""Group finished runs by setting and reduce them across seeds: curves, table rows, run rows.

Every number comes from ``metrics.jsonl`` alone. The definitions follow the C-VFL paper's tables
(Castiglia et al., ICML 2022, Section 5, Tables 2-4: the best metric reached and the cost to a
target), with the spread over seeds the population standard deviation (``numpy.std``, ``ddof=0``),
as the paper's code computes it:

- best metric: each run's best value over its evaluations (max, or min for losses), then
  mean ± std over seeds;
- max metric reached: the best value of the mean curve over epochs, ± the std over seeds at that
  epoch;
- cost to target: each run's training traffic (bytes up + down, in MB = 2^20 bytes) and rounds at
  its first evaluation that meets the target, then mean ± std over seeds; undefined ("–") when any
  seed never reaches it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from vfl.experiments.files import SUMMARY, Manifest, read_metrics
from vfl.results.summary import LOWER_IS_BETTER, Target, first_reaching

MB = 2**20
"""Bytes per MB in every table and plot (the C-VFL code's convention)."""

FloatArray = npt.NDArray[np.float64]
Record = dict[str, Any]


@dataclass(frozen=True)
class RunResult:
    """The records of one finished run of a setting."""

    setting: str
    seed: int
    path: Path
    records: tuple[Record, ...]


@dataclass(frozen=True)
class Stat:
    """Mean and population std of ``count`` values (NaN when there are none)."""

    mean: float
    std: float
    count: int


@dataclass(frozen=True)
class Curve:
    """A metric per evaluation, averaged over a setting's runs.

    Attributes:
        label: The setting's label.
        epochs: The epoch of each evaluation every run recorded (fractional between epochs).
        megabytes: Training traffic (up + down) at each evaluation in MB, averaged over runs.
        mean: The metric's mean over runs at each evaluation.
        std: Its population std over runs at each evaluation.
        num_runs: How many runs the curve averages.
        rounds: The round of each evaluation.
        gflops: Cumulative bottom-model training GFLOPs at each evaluation, averaged over runs
            (NaN where the runs did not record ``bottom_flops``).
    """

    label: str
    epochs: FloatArray
    megabytes: FloatArray
    mean: FloatArray
    std: FloatArray
    num_runs: int
    rounds: FloatArray = field(default_factory=lambda: np.zeros(0))
    gflops: FloatArray = field(default_factory=lambda: np.zeros(0))


@dataclass(frozen=True)
class TargetCost:
    """Cost to reach a target over a setting's runs; ``None`` costs when a run missed it."""

    reached: int
    runs: int
    megabytes: Stat | None
    rounds: Stat | None


@dataclass(frozen=True)
class SettingRow:
    """One row of ``table.md``: a setting reduced over its seeds."""

    label: str
    num_runs: int
    best: Stat
    max_reached: Stat
    max_epoch: float
    target: TargetCost | None


def load_runs(folder: Path, manifest: Manifest) -> dict[str, list[RunResult]]:
    """The finished runs (those with ``summary.json``) of each setting, by label, in order."""
    grouped: dict[str, list[RunResult]] = {}
    for setting in manifest.settings:
        runs = grouped.setdefault(setting.label, [])
        for seed, name in setting.runs:
            run_dir = folder / name
            if (run_dir / SUMMARY).exists():
                runs.append(RunResult(setting.label, seed, run_dir, tuple(read_metrics(run_dir))))
    return grouped


def mean_std(values: Sequence[float]) -> Stat:
    """Mean and population standard deviation (``ddof=0``) of ``values``."""
    if not values:
        return Stat(math.nan, math.nan, 0)
    array = np.asarray(values, dtype=np.float64)
    return Stat(float(array.mean()), float(array.std()), len(values))


def best_value(records: Sequence[Record], metric: str) -> float:
    """A run's best ``metric`` over its evaluations (min for losses), NaN values skipped."""
    values = [float(r[metric]) for r in records if not math.isnan(_value(r, metric))]
    if not values:
        return math.nan
    return min(values) if metric in LOWER_IS_BETTER else max(values)


def mean_curve(label: str, runs: Sequence[RunResult], metric: str) -> Curve:
    """The mean ± std curve of ``metric`` over ``runs``, aligned by round.

    Only the evaluations (rounds) that every run recorded are kept, so runs of different lengths
    are cut to the shortest. The traffic and FLOPs at each point are means over runs (runs of one
    setting send the same bytes whenever their message shapes agree).
    """
    if not runs:
        empty = np.zeros(0)
        return Curve(label, empty, empty, empty, empty, 0, empty, empty)
    by_round = [{int(r["round"]): r for r in run.records} for run in runs]
    common = sorted(set.intersection(*(set(rounds) for rounds in by_round)))

    def column(read: Any) -> FloatArray:  # (runs, evaluations)
        return np.array([[read(e[k]) for k in common] for e in by_round], dtype=np.float64)

    values = column(lambda record: _value(record, metric))
    return Curve(
        label=label,
        epochs=column(lambda record: _value(record, "epoch")).mean(axis=0),
        megabytes=column(_megabytes).mean(axis=0),
        mean=values.mean(axis=0),
        std=values.std(axis=0),
        num_runs=len(runs),
        rounds=np.asarray(common, dtype=np.float64),
        gflops=column(lambda record: _value(record, "bottom_flops") / 1e9).mean(axis=0),
    )


def max_of_mean(curve: Curve, metric: str) -> tuple[Stat, float]:
    """C-VFL's "max metric reached": the best point of the mean curve and the std there.

    C-VFL (ICML 2022) Tables 2-4: the max over epochs of the mean curve across runs, ± the
    across-run std at that epoch (the min for losses). Returns the statistic and its epoch
    (-1 when the curve has no finite point).
    """
    if not np.isfinite(curve.mean).any():
        return Stat(math.nan, math.nan, curve.num_runs), -1
    pick = np.nanargmin if metric in LOWER_IS_BETTER else np.nanargmax
    index = int(pick(curve.mean))
    stat = Stat(float(curve.mean[index]), float(curve.std[index]), curve.num_runs)
    epoch = round(float(curve.epochs[index]), 3)
    return stat, int(epoch) if epoch.is_integer() else epoch


def target_cost(runs: Sequence[RunResult], target: Target) -> TargetCost:
    """Traffic (MB) and rounds at each run's first evaluation that meets ``target``.

    C-VFL (ICML 2022) Tables 2-4: the mean ± population std over runs, undefined (``None``) when
    at least one run never reached the target.
    """
    reached = [first_reaching(list(run.records), target) for run in runs]
    hits = [r for r in reached if r is not None]
    if len(hits) < len(runs) or not runs:
        return TargetCost(len(hits), len(runs), None, None)
    megabytes = mean_std([r.get("bytes", math.nan) / MB for r in hits])
    return TargetCost(len(hits), len(runs), megabytes, mean_std([r["round"] for r in hits]))


def setting_row(
    label: str, runs: Sequence[RunResult], *, metric: str, target: Target | None
) -> SettingRow:
    """The table row of one setting (definitions in the module docstring)."""
    max_reached, max_epoch = max_of_mean(mean_curve(label, runs, metric), metric)
    return SettingRow(
        label=label,
        num_runs=len(runs),
        best=mean_std([best_value(run.records, metric) for run in runs]),
        max_reached=max_reached,
        max_epoch=max_epoch,
        target=None if target is None else target_cost(runs, target),
    )


def run_row(run: RunResult, *, target: Target | None) -> dict[str, Any]:
    """One row of ``results.csv``: a run's final and best metrics, traffic and target costs."""
    final = run.records[-1]
    row: dict[str, Any] = {"setting": run.setting, "seed": run.seed, "run": run.path.name}
    row |= {"epochs": final["epoch"], "rounds": final["round"]}
    for metric in (k for k in final if k.startswith("test_")):
        row[f"final_{metric}"] = _value(final, metric)
        row[f"best_{metric}"] = best_value(run.records, metric)
    traffic = final["bytes_up"] + final["bytes_down"] if "bytes_up" in final else None
    row |= {"mb_up": _value(final, "bytes_up") / MB, "mb_down": _value(final, "bytes_down") / MB}
    row |= {"mb_train": _megabytes(final), "bytes_train": traffic}
    row["wall_time_s"] = _value(final, "wall_time")
    if target is not None:
        reached = first_reaching(list(run.records), target) or {}
        row["target_epoch"] = reached.get("epoch")
        row["target_round"] = reached.get("round")
        row["target_mb"] = reached["bytes"] / MB if "bytes" in reached else None
        row["target_bytes"] = reached.get("bytes")
    return row


def _value(record: Record, metric: str) -> float:
    value = record.get(metric)
    return math.nan if value is None else float(value)


def _megabytes(record: Record) -> float:
    return (_value(record, "bytes_up") + _value(record, "bytes_down")) / MB
