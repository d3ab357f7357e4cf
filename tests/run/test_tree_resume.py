"""A tree run stopped after tree k and resumed grows the same trees as an uninterrupted run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.run.trees import tree_config
from vfl.config import load_config
from vfl.results.files import RunFileError
from vfl.run.folders import resumed_config
from vfl.run.progress import Progress
from vfl.run.runner import train
from vfl.run.signals import RunStopped, StopRequest

MODEL_FILES = ("server/trees.json", "party-1/splits.json", "party-2/splits.json")
TIMINGS = {"seconds", "transport_seconds", "epoch_train_seconds", "wall_time"}


class StopAfter(Progress):
    """Asks ``stop`` to end the run once ``trees`` trees are done (as SIGINT would)."""

    def __init__(self, stop: StopRequest, trees: int) -> None:
        self.stop, self.trees, self.lines = stop, trees, 0

    def epoch_ends(self, line: str) -> None:
        self.lines += 1
        if self.lines == self.trees:
            self.stop.request("SIGINT")


def _model(run_dir: Path) -> dict[str, Any]:
    return {name: json.loads((run_dir / "bundle" / name).read_text()) for name in MODEL_FILES}


def _records(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in TIMINGS} for line in lines]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("whole")
    train(load_config(tree_config(folder)), folder / "run")
    return folder / "run"


def test_a_resumed_run_grows_the_trees_of_an_uninterrupted_one(
    tmp_path: Path, uninterrupted: Path
) -> None:
    # Prepare: the same run, stopped after its first tree
    config = load_config(tree_config(tmp_path))
    run_dir = tmp_path / "run"
    stop = StopRequest()
    with pytest.raises(RunStopped) as stopped:
        train(config, run_dir, stop=stop, progress=StopAfter(stop, 1))
    assert stopped.value.checkpointed and stopped.value.rounds == 1
    assert not (run_dir / "bundle").exists()

    # Execute
    train(resumed_config(run_dir, []), run_dir, resume=True)

    # Assert: every tree, threshold and leaf weight equal; the same records but for timings
    assert _model(run_dir) == _model(uninterrupted)
    assert _records(run_dir) == _records(uninterrupted)


def test_more_trees_continue_a_finished_run_keeping_its_summary(
    tmp_path: Path, uninterrupted: Path
) -> None:
    # Prepare: a finished run of 2 trees
    config = load_config(tree_config(tmp_path, trees=2))
    run_dir = tmp_path / "run"
    train(config, run_dir)

    # Execute
    train(resumed_config(run_dir, ["boost.num_trees=3"]), run_dir, resume=True)

    # Assert: the 3-tree model, and the 2-tree summary kept beside the new one
    assert (
        _model(run_dir)["server/trees.json"]["trees"]
        == (_model(uninterrupted)["server/trees.json"]["trees"])
    )
    assert len(list(run_dir.glob("summary.json.resumed-*"))) == 1
    assert len(list(run_dir.glob("bundle.resumed-*"))) == 1


def test_a_damaged_checkpoint_is_refused_in_one_line(tmp_path: Path) -> None:
    # Prepare
    config = load_config(tree_config(tmp_path, trees=1))
    run_dir = tmp_path / "run"
    train(config, run_dir)
    checkpoint = run_dir / "trees-checkpoint.json"
    checkpoint.write_text(checkpoint.read_text().replace('"trees_done": 1', '"trees_done": 2'))

    # Execute
    with pytest.raises(RunFileError) as error:
        train(resumed_config(run_dir, ["boost.num_trees=2"]), run_dir, resume=True)

    # Assert
    assert "differs from its checksum" in str(error.value)
    assert "\n" not in str(error.value)
