"""Per-epoch learning-rate schedules (step, exponential) and ``train.threads``."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import make_vertical_data
from tests.run.variants import write_run_config
from vfl.config import load_config
from vfl.models.optim import LearningRateSchedule
from vfl.run.compose import build_session


@given(
    round_=st.integers(0, 10_000),
    rounds_per_epoch=st.integers(1, 50),
    gamma=st.floats(0.05, 1.0),
    step_epochs=st.integers(1, 5),
)
def test_per_epoch_schedules_follow_their_formulas(
    round_: int, rounds_per_epoch: int, gamma: float, step_epochs: int
) -> None:
    # Prepare
    epoch = round_ // rounds_per_epoch

    # Execute
    step = LearningRateSchedule(
        0.1, "step", gamma=gamma, step_epochs=step_epochs, rounds_per_epoch=rounds_per_epoch
    )
    exponential = LearningRateSchedule(
        0.1, "exponential", gamma=gamma, rounds_per_epoch=rounds_per_epoch
    )

    # Assert
    assert math.isclose(step.at(round_), 0.1 * gamma ** (epoch // step_epochs))
    assert math.isclose(exponential.at(round_), 0.1 * gamma**epoch)


@pytest.mark.parametrize("protocol", [[], ["protocol.mode=centralized"]], ids=["vfl", "central"])
def test_every_optimizer_of_the_run_follows_the_per_epoch_schedule(protocol: list[str]) -> None:
    # Prepare: 100 rows in batches of 10: 10 rounds per epoch; halve the rate every epoch
    data = make_vertical_data(num_train=100, num_test=20)
    settings = [
        "train.batch_size=10",
        "train.optimizer.name=sgd",
        "train.optimizer.lr=0.4",
        "train.optimizer.lr_schedule=exponential",
        "train.optimizer.lr_gamma=0.5",
        *protocol,
    ]
    session = build_session(load_config(None, settings), data)

    # Execute
    for epoch in range(3):
        session.trainer.train_epoch(epoch)

    # Assert: epoch 2's rounds ran at 0.4 * 0.5^2
    optimizers = (
        [session.trainer.optimizer]  # type: ignore[attr-defined]
        if protocol
        else [p.optimizer for p in session.parties] + [session.trainer.server.optimizer]  # type: ignore[attr-defined]
    )
    for optimizer in optimizers:
        assert [group["lr"] for group in optimizer.param_groups] == [pytest.approx(0.1)]


def test_a_constant_schedule_leaves_the_rate_alone() -> None:
    # Negative control
    data = make_vertical_data(num_train=100, num_test=20)
    session = build_session(load_config(None, ["train.batch_size=10"]), data)
    session.trainer.train_epoch(0)
    assert session.parties[0].optimizer.param_groups[0]["lr"] == 1e-3


def test_train_threads_sets_torchs_threads_before_the_data_is_loaded(tmp_path: Path) -> None:
    # Prepare: a fresh process, so that the setting is observed from the start
    config = write_run_config(tmp_path)
    code = (
        "import sys, torch\n"
        "from vfl.cli import main\n"
        "import vfl.run.runner as runner\n"
        "original = runner.prepare\n"
        "def observed(config):\n"
        "    print('threads', torch.get_num_threads())\n"
        "    return original(config)\n"
        "runner.prepare = observed\n"
        f"sys.exit(main(['run', {str(config)!r}, '--run-dir', {str(tmp_path / 'run')!r},"
        " '--set', 'train.threads=1', '--set', 'train.epochs=1']))\n"
    )

    # Execute
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )

    # Assert
    assert result.returncode == 0, result.stderr
    assert "threads 1" in result.stdout
    assert torch.get_num_threads() >= 1
