"""A run stopped inside an epoch resumes exactly where it stopped (extends test_resume_equality).

Straight: 2 epochs (20 rounds) with an evaluation every 4 rounds. Stopped: the same run, told
to stop by a signal after round 13 (it finishes the round, checkpoints, exits 130 with the
resume command), or killed after round 17 with a checkpoint every 5 rounds (it resumes from
round 15). Resumed, it must equal the straight run: parameters and every checkpointed state,
metrics lines but for wall time, and the ledger (a secure-aggregation run agrees on fresh keys
once more, at the round it resumed from).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.cli.runs import Outcome, metrics, vfl
from tests.run.variants import (
    VARIANTS,
    assert_same_ledger,
    assert_same_state,
    ledger_rows,
    without_time,
    write_run_config,
)
from vfl.run.progress import Progress

EPOCHS = ("--set", "train.epochs=2", "--set", "train.eval_every=4", "--quiet")
MID_EPOCH_VARIANTS = {**VARIANTS, "centralized": ("protocol.mode=centralized",)}


@contextmanager
def after_round(monkeypatch: pytest.MonkeyPatch, rounds: int, act: Any) -> Iterator[None]:
    """Call ``act()`` once, right after round ``rounds`` of the run (counted from its start)."""
    done = [0]

    def counting(self: Progress, loss: float) -> None:  # every run here is --quiet: Progress()
        done[0] += 1
        if done[0] == rounds:
            act()

    with monkeypatch.context() as patch:
        patch.setattr(Progress, "round_ends", counting)
        yield


def send(number: int) -> Any:
    return lambda: os.kill(os.getpid(), number)


def interrupt() -> None:
    raise KeyboardInterrupt


def checkpoint(run_dir: Path) -> dict[str, Any]:
    state: dict[str, Any] = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    return state


def assert_equal_runs(straight: Path, resumed: Path, resumed_at: int) -> None:
    """Same state, metrics lines (but wall time) and ledger; see the module docstring."""
    straight_state, resumed_state = checkpoint(straight)["session"], checkpoint(resumed)["session"]
    straight_ledger = straight_state["trainer"].pop("ledger", None)
    resumed_ledger = resumed_state["trainer"].pop("ledger", None)
    assert_same_state(straight_state, resumed_state)
    assert without_time(metrics(straight)) == without_time(metrics(resumed))
    if straight_ledger is None:  # the centralized baseline sends nothing
        assert resumed_ledger is None and not (resumed / "ledger.csv").exists()
        return
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


def run_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sets: list[str]
) -> tuple[Path, Path, Path]:
    """The config, and the straight run's folder (run) and the stopped run's (not yet run)."""
    config = write_run_config(tmp_path)
    straight = tmp_path / "straight"
    assert vfl(capsys, "run", str(config), "--run-dir", str(straight), *sets, *EPOCHS).status == 0
    return config, straight, tmp_path / "stopped"


def assert_stopped(outcome: Outcome, run_dir: Path, message: str, status: int = 130) -> None:
    assert outcome.status == status, outcome.err
    assert outcome.error_lines[-1] == f"vfl: {message}; continue with `vfl run --resume {run_dir}`"
    assert not (run_dir / "summary.json").exists()
    assert (run_dir / "error.txt").read_text().strip() == outcome.error_lines[-1][5:]


@pytest.mark.parametrize("variant", list(MID_EPOCH_VARIANTS))
def test_a_run_stopped_by_a_signal_mid_epoch_resumes_to_the_uninterrupted_run(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    variant: str,
) -> None:
    # Prepare
    sets = [arg for item in MID_EPOCH_VARIANTS[variant] for arg in ("--set", item)]
    config, straight, stopped = run_pair(tmp_path, capsys, sets)

    # Execute: SIGINT after round 13, then resume
    with after_round(monkeypatch, 13, send(signal.SIGINT)):
        outcome = vfl(capsys, "run", str(config), "--run-dir", str(stopped), *sets, *EPOCHS)
    assert_stopped(
        outcome,
        stopped,
        "stopped by SIGINT after round 13 (epoch 2, round 3 of 10); saved its checkpoint and"
        f" the metrics so far in {stopped}",
    )
    assert (checkpoint(stopped)["epoch"], checkpoint(stopped)["position"]) == (1, 3)
    resumed = vfl(capsys, "run", "--resume", str(stopped), "--quiet")

    # Assert
    assert resumed.status == 0, resumed.err
    assert_equal_runs(straight, stopped, resumed_at=13)


@pytest.mark.parametrize("variant", ["split-learning", "pbm-secure-aggregation", "lvfl-schedule"])
def test_a_run_killed_between_checkpoints_resumes_from_the_last_one(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    variant: str,
) -> None:
    # Prepare: a checkpoint every 5 rounds; the evaluation at round 16 is past the last one
    sets = [arg for item in VARIANTS[variant] for arg in ("--set", item)]
    config, straight, stopped = run_pair(tmp_path, capsys, sets)
    every = ["--set", "train.checkpoint_every=5"]

    # Execute: an immediate interrupt (a second Ctrl-C) after round 17, then resume
    with after_round(monkeypatch, 17, interrupt):
        outcome = vfl(capsys, "run", str(config), "--run-dir", str(stopped), *sets, *every, *EPOCHS)
    assert outcome.status == 130
    assert outcome.error_lines == [
        f"vfl: interrupted; continue from the last checkpoint with `vfl run --resume {stopped}`"
    ]
    assert checkpoint(stopped)["session"]["trainer"]["rounds"] == 15
    assert metrics(stopped)[-1]["round"] == 16
    resumed = vfl(capsys, "run", "--resume", str(stopped), "--quiet")

    # Assert
    assert resumed.status == 0, resumed.err
    assert_equal_runs(straight, stopped, resumed_at=15)


def test_sigterm_in_the_first_epoch_leaves_a_resumable_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: no checkpoints within epochs, so only the stop writes one
    config, straight, stopped = run_pair(tmp_path, capsys, [])

    # Execute
    with after_round(monkeypatch, 4, send(signal.SIGTERM)):
        outcome = vfl(capsys, "run", str(config), "--run-dir", str(stopped), *EPOCHS)
    assert_stopped(
        outcome,
        stopped,
        "stopped by SIGTERM after round 4 (epoch 1, round 4 of 10); saved its checkpoint and"
        f" the metrics so far in {stopped}",
        status=143,
    )
    resumed = vfl(capsys, "run", "--resume", str(stopped), "--quiet")

    # Assert
    assert resumed.status == 0, resumed.err
    assert_equal_runs(straight, stopped, resumed_at=4)


def test_the_comparison_fails_for_a_resume_from_the_wrong_round(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: a negative control: a checkpoint whose position was moved back by one round,
    # so the resumed run trains on round 13's batch twice
    config, straight, stopped = run_pair(tmp_path, capsys, [])
    with after_round(monkeypatch, 13, send(signal.SIGINT)):
        vfl(capsys, "run", str(config), "--run-dir", str(stopped), *EPOCHS)
    state = checkpoint(stopped)
    state["position"] -= 1
    torch.save(state, stopped / "checkpoint.pt")

    # Execute
    resumed = vfl(capsys, "run", "--resume", str(stopped), "--quiet")

    # Assert
    assert resumed.status == 0, resumed.err
    with pytest.raises(AssertionError):
        assert_equal_runs(straight, stopped, resumed_at=13)


@pytest.mark.parametrize(
    ("vfl_command", "number"),
    [("run", signal.SIGINT), ("attack", signal.SIGTERM)],
)
def test_a_signal_from_outside_stops_a_real_process_cleanly(
    tmp_path: Path, vfl_command: str, number: signal.Signals
) -> None:
    # Prepare: a long run in its own process, as a user starts it
    config = write_run_config(tmp_path)
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "vfl.cli", vfl_command, str(config), "--run-dir", str(run_dir)]
    if vfl_command == "attack":
        command += ["--set", "attack.name=label_inference"]
    source = str(Path(__file__).parents[2] / "src")
    process = subprocess.Popen(
        [*command, "--set", "train.epochs=1000", "--set", "train.batch_size=8"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": source},
    )
    deadline = time.monotonic() + 120
    while not (run_dir / "checkpoint.pt").exists() and time.monotonic() < deadline:
        time.sleep(0.1)  # the first epoch's checkpoint: training is under way

    # Execute
    process.send_signal(number)
    _, err = process.communicate(timeout=120)

    # Assert: what was saved, and the command that continues
    assert process.returncode == 128 + number, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"vfl: stopped by {number.name} after round ")
    assert last.endswith(
        f"; saved its checkpoint and the metrics so far in {run_dir}; continue with"
        f" `vfl {vfl_command} --resume {run_dir}`"
    )
    assert checkpoint(run_dir)["session"]["trainer"]["rounds"] == int(last.split()[6])
