"""``vfl run --resume`` replaces nothing it wrote without keeping a copy (real processes).

Extending a finished run keeps its summary; a resume that drops metrics records written after
the checkpoint keeps the file as it was. The negative controls: a resume that changes nothing
keeps no copy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.run.variants import write_run_config


def vfl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vfl.cli", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.fixture
def finished(tmp_path: Path) -> Path:
    """A finished one-epoch run."""
    config = write_run_config(tmp_path)
    run_dir = tmp_path / "run"
    result = vfl("run", str(config), "--run-dir", str(run_dir), "--set", "train.epochs=1")
    assert result.returncode == 0, result.stderr
    return run_dir


def test_extending_a_finished_run_keeps_its_summary(finished: Path) -> None:
    # Prepare
    before = (finished / "summary.json").read_text()

    # Execute
    result = vfl("run", "--resume", str(finished), "--set", "train.epochs=2")

    # Assert
    assert result.returncode == 0, result.stderr
    (kept,) = finished.glob("summary.json.resumed-*")
    assert kept.read_text() == before
    assert json.loads((finished / "summary.json").read_text())["epochs"] == 2


def test_resuming_a_finished_run_to_the_same_end_keeps_no_copy(finished: Path) -> None:
    # Execute: the negative control: nothing more to train, nothing dropped
    result = vfl("run", "--resume", str(finished))

    # Assert
    assert result.returncode == 0, result.stderr
    assert not list(finished.glob("*.resumed-*"))


def test_records_after_the_checkpoint_are_dropped_only_after_a_copy_is_kept(
    finished: Path,
) -> None:
    # Prepare: a record written after the last checkpoint (as by a kill between them)
    metrics = finished / "metrics.jsonl"
    last = json.loads(metrics.read_text().splitlines()[-1])
    later = {**last, "epoch": 2, "round": last["round"] + 5}
    before = metrics.read_text() + json.dumps(later) + "\n"
    metrics.write_text(before)
    (finished / "summary.json").unlink()

    # Execute
    result = vfl("run", "--resume", str(finished))

    # Assert
    assert result.returncode == 0, result.stderr
    (kept,) = finished.glob("metrics.jsonl.resumed-*")
    assert kept.read_text() == before
    assert metrics.read_text() == before.rsplit(json.dumps(later), 1)[0]
