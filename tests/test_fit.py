from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import make_models, make_vertical_data
from tests.test_cli import write_config, write_table
from vfl.cli import main
from vfl.data.dataset import Dataset, Split
from vfl.errors import ConfigError
from vfl.run.api import simulate
from vfl.run.data import binarize
from vfl.run.fit import fit
from vfl.run.session import LocalParties, Session


def small_simulation() -> Session[LocalParties]:
    data = make_vertical_data(num_train=100, num_test=40)
    bottoms, head = make_models(data)
    return simulate(
        data,
        bottoms=bottoms,
        head=head,
        batch_size=10,
        optimizer=lambda p: torch.optim.Adam(p, lr=0.05),
    )


def test_evaluations_inside_epochs_have_fractional_epochs() -> None:
    # Execute: 10 rounds per epoch, an evaluation every 4 rounds
    records = fit(small_simulation(), epochs=2, progress=False, eval_every=4)

    # Assert
    assert [r["round"] for r in records] == [0, 4, 8, 10, 12, 16, 20]
    assert [r["epoch"] for r in records] == [0, 0.4, 0.8, 1, 1.2, 1.6, 2]
    assert [r["train_loss"] is None for r in records] == [
        True,
        True,
        True,
        False,
        True,
        True,
        False,
    ]


def test_training_stops_at_the_target(tmp_path: Path) -> None:
    # Prepare
    config = write_config(tmp_path, write_table(tmp_path / "t.csv"))

    # Execute
    main(
        [
            "run",
            str(config),
            "--run-dir",
            str(tmp_path / "run"),
            "--set",
            "train.epochs=20",
            "--set",
            "train.eval_every=2",
            "--set",
            "target.metric=test_accuracy",
            "--set",
            "target.value=0.7",
            "--set",
            "target.stop=true",
        ]
    )

    # Assert
    records = [
        json.loads(line) for line in (tmp_path / "run/metrics.jsonl").read_text().splitlines()
    ]
    assert records[-1]["test_accuracy"] >= 0.7
    assert all(r["test_accuracy"] < 0.7 for r in records[:-1])
    assert records[-1]["epoch"] < 20
    summary = json.loads((tmp_path / "run/summary.json").read_text())
    assert summary["target"]["reached"]["round"] == records[-1]["round"]


def test_a_target_met_by_the_untrained_model_stops_before_any_round(tmp_path: Path) -> None:
    # Prepare: any accuracy reaches 0
    from vfl.results.files import RunDirectory
    from vfl.results.summary import Target

    simulation = small_simulation()

    # Execute
    records = fit(
        simulation,
        epochs=3,
        run=RunDirectory(tmp_path),
        progress=False,
        target=Target("test_accuracy", 0.0),
        stop_at_target=True,
    )

    # Assert
    assert [r["round"] for r in records] == [0]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["target"]["reached"]["round"] == 0


def test_stopping_needs_a_target() -> None:
    with pytest.raises(ConfigError, match="needs a target"):
        fit(small_simulation(), epochs=1, progress=False, stop_at_target=True)


def test_binarize_maps_the_positive_classes_to_one() -> None:
    # Prepare
    split = Split(np.arange(6), np.zeros((6, 2), np.float32), np.array([0, 1, 2, 3, 4, 5]))
    dataset = Dataset("d", split, split, classes=tuple("abcdef"), columns=("x", "y"))

    # Execute
    binary = binarize(dataset, [1, 3, 5])

    # Assert
    assert binary.train.labels.tolist() == [0, 1, 0, 1, 0, 1]
    assert binary.classes == ("not (b, d, f)", "(b, d, f)")
    with pytest.raises(ConfigError, match=r"\[7\] are not classes"):
        binarize(dataset, [7])


def test_checkpoints_within_epochs_record_where_the_epoch_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: 10 rounds per epoch, a checkpoint every 4 rounds; a stop after round 13
    from vfl.protocol.loop import ServerLoop
    from vfl.results.files import RunDirectory
    from vfl.run.fit import RunStopped
    from vfl.run.signals import StopRequest

    stop = StopRequest()
    simulation = small_simulation()
    losses: list[float] = []
    assert isinstance(simulation.trainer, ServerLoop)
    step = simulation.trainer.train_round

    def counted(ids: torch.Tensor) -> float:
        losses.append(step(ids))
        if len(losses) == 13:
            stop.request("a test")
        return losses[-1]

    monkeypatch.setattr(simulation.trainer, "train_round", counted)
    run = RunDirectory(tmp_path)

    # Execute
    with pytest.raises(RunStopped, match=r"stopped by a test after round 13 \(epoch 2, round 3"):
        fit(simulation, epochs=3, run=run, progress=False, checkpoint_every=4, stop=stop)

    # Assert: the checkpoint is at round 13, 3 rounds into epoch 2, with their summed loss
    state = run.load_checkpoint()
    assert (state["epoch"], state["position"]) == (1, 3)
    assert state["session"]["trainer"]["rounds"] == 13
    assert state["epoch_loss"] == sum(losses[10:13])
    assert not (tmp_path / "summary.json").exists()


def test_a_stop_at_an_epochs_end_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Prepare: 10 rounds per epoch; a stop requested in the epoch's last round
    from vfl.protocol.loop import ServerLoop
    from vfl.results.files import RunDirectory
    from vfl.run.fit import RunStopped
    from vfl.run.signals import StopRequest

    stop = StopRequest()
    simulation = small_simulation()
    assert isinstance(simulation.trainer, ServerLoop)
    step = simulation.trainer.train_round
    rounds: list[float] = []

    def counted(ids: torch.Tensor) -> float:
        rounds.append(step(ids))
        if len(rounds) == 10:
            stop.request("a test")
        return rounds[-1]

    monkeypatch.setattr(simulation.trainer, "train_round", counted)

    # Execute / Assert: "the end of epoch 1", not "epoch 2, round 0"
    with pytest.raises(RunStopped, match=r"after round 10 \(the end of epoch 1\)"):
        fit(simulation, epochs=3, run=RunDirectory(tmp_path), progress=False, stop=stop)


def test_a_stop_without_a_run_directory_says_nothing_can_be_resumed() -> None:
    # Prepare
    from vfl.run.fit import RunStopped
    from vfl.run.signals import StopRequest

    stop = StopRequest()
    stop.request("SIGTERM")

    # Execute / Assert: requested before the first round, so no round runs
    with pytest.raises(RunStopped, match=r"after round 0 .*no checkpoint holds it") as stopped:
        fit(small_simulation(), epochs=1, progress=False, stop=stop)
    assert not stopped.value.checkpointed
