"""Reductions over seeds on hand-written metrics: means, population std, C-VFL's definitions."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.experiments.sweeps import curve_records
from vfl.experiments.aggregate import (
    RunResult,
    best_value,
    max_of_mean,
    mean_curve,
    mean_std,
    run_row,
    setting_row,
    target_cost,
)
from vfl.results.summary import Target

ACCURACY = "test_accuracy"


def runs(*curves: list[float], mb_per_epoch: float = 1.0) -> list[RunResult]:
    return [
        RunResult(
            "s", seed, Path(f"s__seed{seed}"), tuple(curve_records(c, mb_per_epoch=mb_per_epoch))
        )
        for seed, c in enumerate(curves)
    ]


def test_best_metric_is_the_mean_and_population_std_of_each_runs_best() -> None:
    # Prepare
    results = runs([0.1, 0.8, 0.7], [0.1, 0.6, 0.9])

    # Execute
    row = setting_row("s", results, metric=ACCURACY, target=None)

    # Assert: population std (ddof=0) of 0.8 and 0.9 is 0.05; the sample std would be 0.0707
    assert row.best.mean == pytest.approx(0.85)
    assert row.best.std == pytest.approx(0.05)
    assert row.num_runs == 2


def test_max_reached_is_the_best_point_of_the_mean_curve_with_the_std_there() -> None:
    # Prepare: each run peaks at 0.9, but at different epochs
    results = runs([0.5, 0.9, 0.6], [0.5, 0.6, 0.9])

    # Execute
    row = setting_row("s", results, metric=ACCURACY, target=None)

    # Assert: mean curve 0.5, 0.75, 0.75: the max is 0.75 (first at epoch 1), std |0.9-0.6|/2
    assert row.best.mean == pytest.approx(0.9)
    assert row.max_reached.mean == pytest.approx(0.75)
    assert row.max_reached.std == pytest.approx(0.15)
    assert row.max_epoch == 1


def test_losses_are_best_when_lowest() -> None:
    # Prepare: test_loss = 1 - accuracy in these records
    results = runs([0.5, 0.9, 0.6], [0.5, 0.7, 0.8])

    # Execute
    best = best_value(results[0].records, "test_loss")
    stat, epoch = max_of_mean(mean_curve("s", results, "test_loss"), "test_loss")

    # Assert
    assert best == pytest.approx(0.1)
    assert stat.mean == pytest.approx(0.2)  # mean losses 0.5, 0.2, 0.3
    assert epoch == 1


def test_cost_to_target_averages_traffic_and_rounds_at_first_reaching() -> None:
    # Prepare: 2 MB and 10 rounds per epoch; the runs reach 0.7 at epochs 1 and 2
    results = runs([0.1, 0.75, 0.8], [0.1, 0.6, 0.72], mb_per_epoch=2.0)

    # Execute
    cost = target_cost(results, Target(ACCURACY, 0.7))

    # Assert
    assert (cost.reached, cost.runs) == (2, 2)
    assert cost.megabytes is not None and cost.rounds is not None
    assert cost.megabytes.mean == pytest.approx(3.0)
    assert cost.megabytes.std == pytest.approx(1.0)
    assert (cost.rounds.mean, cost.rounds.std) == (15.0, 5.0)


def test_cost_to_target_is_undefined_when_any_seed_misses() -> None:
    # Prepare
    results = runs([0.1, 0.75], [0.1, 0.8], [0.1, 0.65])

    # Execute
    cost = target_cost(results, Target(ACCURACY, 0.7))

    # Assert
    assert (cost.reached, cost.runs) == (2, 3)
    assert cost.megabytes is None and cost.rounds is None


def test_curves_keep_the_epochs_every_run_recorded() -> None:
    # Prepare: one run stopped after epoch 2
    results = runs([0.1, 0.5, 0.7, 0.9], [0.3, 0.5, 0.9])

    # Execute
    curve = mean_curve("s", results, ACCURACY)

    # Assert
    assert curve.epochs.tolist() == [0, 1, 2]
    assert curve.mean.tolist() == pytest.approx([0.2, 0.5, 0.8])
    assert curve.std.tolist() == pytest.approx([0.1, 0.0, 0.1])
    assert curve.megabytes.tolist() == pytest.approx([0.0, 1.0, 2.0])


def test_curves_keep_evaluations_between_epochs_and_average_compute() -> None:
    # Prepare: evaluations every half epoch (rounds 0, 5, 10), with compute recorded
    results = runs([0.1, 0.5, 0.7], [0.3, 0.7, 0.9])
    for run, scale in zip(results, (1.0, 3.0), strict=True):
        for index, record in enumerate(run.records):
            record.update(epoch=index / 2, round=5 * index, bottom_flops=scale * 1e9 * index)

    # Execute
    curve = mean_curve("s", results, ACCURACY)

    # Assert
    assert curve.rounds.tolist() == [0, 5, 10]
    assert curve.epochs.tolist() == [0.0, 0.5, 1.0]
    assert curve.mean.tolist() == pytest.approx([0.2, 0.6, 0.8])
    assert curve.gflops.tolist() == pytest.approx([0.0, 2.0, 4.0])
    assert max_of_mean(curve, ACCURACY)[1] == 1


def test_the_run_row_holds_final_best_traffic_and_target() -> None:
    # Prepare
    (result,) = runs([0.1, 0.8, 0.7], mb_per_epoch=4.0)

    # Execute
    row = run_row(result, target=Target(ACCURACY, 0.75))

    # Assert
    assert (row["setting"], row["seed"], row["epochs"], row["rounds"]) == ("s", 0, 2, 20)
    assert (row["final_test_accuracy"], row["best_test_accuracy"]) == (0.7, 0.8)
    assert row["mb_train"] == pytest.approx(8.0)
    assert (row["target_epoch"], row["target_round"], row["target_mb"]) == (1, 10, 4.0)
    assert row["target_bytes"] == 4 * 2**20 and row["bytes_train"] == 8 * 2**20


def test_an_unreached_target_leaves_the_run_row_empty() -> None:
    (result,) = runs([0.1, 0.2])
    row = run_row(result, target=Target(ACCURACY, 0.75))
    assert (row["target_epoch"], row["target_round"], row["target_mb"]) == (None, None, None)


def test_mean_std_of_nothing_is_nan() -> None:
    stat = mean_std([])
    assert math.isnan(stat.mean) and math.isnan(stat.std) and stat.count == 0


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(0, 1, allow_nan=False), min_size=4, max_size=4), min_size=1, max_size=5
    )
)
def test_the_max_of_the_mean_curve_never_exceeds_the_mean_best(curves: list[list[float]]) -> None:
    # Prepare
    results = runs(*curves)

    # Execute
    row = setting_row("s", results, metric=ACCURACY, target=None)

    # Assert: at every epoch the mean is at most the mean of the per-run maxima
    assert row.max_reached.mean <= row.best.mean + 1e-12
    assert isinstance(row.max_epoch, int)  # one evaluation per epoch, from epoch 0
    column = np.array(curves)[:, row.max_epoch]
    assert row.max_reached.std == pytest.approx(
        float(np.sqrt(np.mean((column - column.mean()) ** 2)))
    )
