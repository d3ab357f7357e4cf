"""A resumed run equals an uninterrupted one, for every protocol variant.

k epochs, stop, resume to n, against n straight: identical parameters and every other
checkpointed state (optimizers, generators, schedules, pruners, accountant, ledger), identical
metrics lines (but for wall time) and an identical ledger. The one difference allowed: a run
with secure aggregation agrees on fresh keys after a restart (key material is never written to
disk), so its ledger holds one more key agreement, at the round it resumed from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.run.variants import (
    VARIANTS,
    assert_same_ledger,
    assert_same_state,
    ledger_rows,
    without_time,
    write_run_config,
)
from vfl.cli import main

STRAIGHT_EPOCHS = 4
FIRST_EPOCHS = 2
ROUNDS_PER_EPOCH = 10


def run_cli(*args: str) -> None:
    assert main(list(args)) == 0


def checkpoint(run_dir: Path) -> dict[str, Any]:
    state: dict[str, Any] = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    return state


def metrics(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_resumed_run_equals_the_uninterrupted_run(tmp_path: Path, variant: str) -> None:
    # Prepare
    config = write_run_config(tmp_path)
    sets = [arg for item in VARIANTS[variant] for arg in ("--set", item)]
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"

    # Execute
    run_cli("run", str(config), "--run-dir", str(straight), *sets)
    run_cli(
        "run", str(config), "--run-dir", str(resumed), *sets,
        "--set", f"train.epochs={FIRST_EPOCHS}",
    )  # fmt: skip
    run_cli("run", "--resume", str(resumed), "--set", f"train.epochs={STRAIGHT_EPOCHS}")

    # Assert
    assert checkpoint(resumed)["epoch"] == STRAIGHT_EPOCHS
    straight_state, resumed_state = checkpoint(straight)["session"], checkpoint(resumed)["session"]
    straight_ledger = straight_state["trainer"].pop("ledger")
    resumed_ledger = resumed_state["trainer"].pop("ledger")
    assert_same_state(straight_state, resumed_state)
    assert without_time(metrics(straight)) == without_time(metrics(resumed))
    resumed_at = FIRST_EPOCHS * ROUNDS_PER_EPOCH
    assert_same_ledger(
        ledger_rows((straight / "ledger.csv").read_text()),
        ledger_rows((resumed / "ledger.csv").read_text()),
        resumed_at,
    )
    assert_same_ledger(
        [tuple(row) for row in straight_ledger["rows"]],
        [tuple(row) for row in resumed_ledger["rows"]],
        resumed_at,
    )


def test_the_state_comparison_fails_on_a_run_that_did_not_resume(tmp_path: Path) -> None:
    # Prepare: a negative control: a run restarted from scratch instead of resumed
    config = write_run_config(tmp_path)
    straight, restarted = tmp_path / "straight", tmp_path / "restarted"
    run_cli("run", str(config), "--run-dir", str(straight), "--set", "train.epochs=2")

    # Execute: two fresh epochs are not the same as epochs 3 and 4
    run_cli("run", str(config), "--run-dir", str(restarted), "--set", "train.epochs=1")
    run_cli("run", "--resume", str(restarted), "--set", "train.epochs=2")
    run_cli("run", str(config), "--run-dir", str(tmp_path / "other"), "--set", "train.seed=1")

    # Assert: equal after resuming, different from a run with another seed
    assert_same_state(checkpoint(straight)["session"], checkpoint(restarted)["session"])
    with pytest.raises(AssertionError):
        assert_same_state(
            checkpoint(straight)["session"], checkpoint(tmp_path / "other")["session"]
        )
