"""``output.tensorboard``: TensorBoard event files hold exactly what ``metrics.jsonl`` holds."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.test_cli import write_config, write_table
from vfl.cli import main
from vfl.results.tensorboard import scalars


def events(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar tag of the run's event files, as (step, value) in step order."""
    accumulator = EventAccumulator(str(run_dir / "tensorboard"))
    accumulator.Reload()
    return {
        tag: [(event.step, event.value) for event in accumulator.Scalars(tag)]
        for tag in accumulator.Tags()["scalars"]
    }


def expected(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """The same, read from ``metrics.jsonl``."""
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    by_tag: dict[str, list[tuple[int, float]]] = {}
    for record in records:
        for tag, value in scalars(record).items():
            by_tag.setdefault(tag, []).append((int(record["round"]), value))
    return by_tag


def assert_same(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert sorted(got) == sorted(want)
    for tag, points in want.items():
        assert [step for step, _ in got[tag]] == [step for step, _ in points], tag
        for (_, value), (_, wanted) in zip(got[tag], points, strict=True):
            assert math.isclose(value, wanted, rel_tol=1e-6, abs_tol=1e-6), (tag, value, wanted)


def test_event_files_hold_every_metrics_record(tmp_path: Path) -> None:
    # Prepare
    config = write_config(tmp_path, write_table(tmp_path / "t.csv"))
    run_dir = tmp_path / "run"

    # Execute
    status = main(
        ["run", str(config), "--run-dir", str(run_dir), "--set", "output.tensorboard=true"]
    )

    # Assert: every numeric field of every record, at its round, and nothing else
    assert status == 0
    want = expected(run_dir)
    assert {"test_accuracy", "test_loss", "train_loss", "bytes_up", "epoch"} <= set(want)
    assert len(want["test_accuracy"]) == 4  # epochs 0..3: the check is not vacuous
    assert_same(events(run_dir), want)


def test_a_resumed_run_drops_the_events_after_its_checkpoint(tmp_path: Path) -> None:
    # Prepare: 2 epochs, then resumed to 3
    config = write_config(tmp_path, write_table(tmp_path / "t.csv"))
    run_dir = tmp_path / "run"
    board = ["--set", "output.tensorboard=true"]
    assert (
        main(["run", str(config), "--run-dir", str(run_dir), "--set", "train.epochs=2", *board])
        == 0
    )

    # Execute
    status = main(["run", "--resume", str(run_dir), "--set", "train.epochs=3"])

    # Assert: one point per evaluation, as in metrics.jsonl
    assert status == 0
    assert_same(events(run_dir), expected(run_dir))


def test_no_event_files_unless_asked_for(tmp_path: Path) -> None:
    config = write_config(tmp_path, write_table(tmp_path / "t.csv"))
    assert main(["run", str(config), "--run-dir", str(tmp_path / "run")]) == 0
    assert not (tmp_path / "run" / "tensorboard").exists()
