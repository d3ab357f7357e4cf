from __future__ import annotations

import math

from vfl.results.summary import Target, first_reaching, summarize


def records() -> list[dict]:  # type: ignore[type-arg]
    rows = []
    for epoch, (acc, loss) in enumerate([(0.1, 2.3), (0.8, 0.6), (0.93, 0.3), (0.91, 0.25)]):
        train_loss = None if epoch == 0 else loss
        rows.append(
            {
                "epoch": epoch,
                "round": 10 * epoch,
                "train_loss": train_loss,
                "test_accuracy": acc,
                "test_loss": loss,
                "test_auc": math.nan,
                "bytes_up": 100 * epoch,
                "bytes_down": 50 * epoch,
                "bytes_eval": 7,
                "wall_time": 1.5 * epoch,
            }
        )
    return rows


def test_target_reports_the_first_evaluation_that_meets_it() -> None:
    reached = first_reaching(records(), Target("test_accuracy", 0.9))
    assert reached == {"epoch": 2, "round": 20, "wall_time": 3.0, "bytes": 300}


def test_loss_targets_are_reached_from_above() -> None:
    reached = first_reaching(records(), Target("test_loss", 0.3))
    assert reached is not None and reached["epoch"] == 2


def test_an_unreached_target_is_none() -> None:
    summary = summarize(records(), target=Target("test_accuracy", 0.99))
    assert summary["target"] == {"metric": "test_accuracy", "value": 0.99, "reached": None}


def test_best_values_skip_nan_and_pick_the_right_direction() -> None:
    # Execute
    summary = summarize(records())

    # Assert
    assert summary["best"]["test_accuracy"] == {"value": 0.93, "epoch": 2}
    assert summary["best"]["test_loss"] == {"value": 0.25, "epoch": 3}
    assert "test_auc" not in summary["best"]
    assert summary["bytes"]["train_total"] == 450
    assert summary["bytes"]["per_round"] == 15.0
