"""A resume compares the run's config with the one its checkpoint was trained with."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli.runs import metrics, small_config, snapshot, vfl
from vfl.run.folders import RESUMABLE_KEYS


def finished_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A 3-epoch run with its checkpoint."""
    run_dir = tmp_path / "run"
    assert vfl(capsys, "run", str(small_config(tmp_path)), "--run-dir", str(run_dir)).status == 0
    return run_dir


def edit(config: Path, pattern: str, replacement: str) -> None:
    """Replace the one line of ``config`` that matches ``pattern``."""
    text, count = re.subn(pattern, replacement, config.read_text(), count=1, flags=re.M)
    assert count == 1, pattern
    config.write_text(text)


@pytest.mark.parametrize(
    ("pattern", "replacement", "named"),
    [
        (r"^lr = .*$", "lr = 0.1", "train.optimizer.lr (0.02 -> 0.1)"),
        (r"^embedding_dim = 4$", "embedding_dim = 8", "model.bottom.embedding_dim (4 -> 8)"),
        (r"^batch_size = 32$", "batch_size = 64", "train.batch_size (32 -> 64)"),
    ],
)
def test_an_edited_config_is_refused_naming_the_field(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    pattern: str,
    replacement: str,
    named: str,
) -> None:
    # Prepare
    run_dir = finished_run(tmp_path, capsys)
    edit(run_dir / "config.toml", pattern, replacement)
    before = snapshot(run_dir)

    # Execute
    outcome = vfl(capsys, "run", "--resume", str(run_dir), "--set", "train.epochs=4", "--quiet")

    # Assert: one line naming the field, nothing written
    assert outcome.status == 2
    assert "Traceback" not in outcome.err
    assert outcome.err.count("\n") == 1
    assert f"differs from the one its checkpoint was trained with in {named};" in outcome.err
    assert snapshot(run_dir) == before


def test_every_changed_field_is_named_in_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    run_dir = finished_run(tmp_path, capsys)
    config = run_dir / "config.toml"
    edit(config, r"^lr = .*$", "lr = 0.1")
    edit(config, r"^activation = \"relu\"$", 'activation = "tanh"')
    edit(config, r"^eval_every = 0$", "eval_every = 5")

    # Execute
    outcome = vfl(capsys, "run", "--resume", str(run_dir), "--quiet")

    # Assert
    assert outcome.status == 2
    for field in ("train.optimizer.lr", "model.bottom.activation", "train.eval_every"):
        assert f"{field} (" in outcome.err


def test_the_resumable_fields_may_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: the negative control: edits of fields that may change on resume
    run_dir = finished_run(tmp_path, capsys)
    config = run_dir / "config.toml"
    edit(config, r"^epochs = 3$", "epochs = 4")
    edit(config, r"^checkpoint_every = 0$", "checkpoint_every = 5")
    edit(config, r"^name = \"\"$", 'name = "renamed"')

    # Execute
    outcome = vfl(capsys, "run", "--resume", str(run_dir), "--set", "output.progress=true")

    # Assert
    assert outcome.status == 0, outcome.err
    assert [r["epoch"] for r in metrics(run_dir)] == [0, 1, 2, 3, 4]
    assert {"train.epochs", "train.checkpoint_every", "output.name"} <= set(RESUMABLE_KEYS)


def test_set_of_a_field_that_cannot_change_is_refused_before_torch_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    run_dir = finished_run(tmp_path, capsys)

    # Execute
    outcome = vfl(capsys, "run", "--resume", str(run_dir), "--set", "train.optimizer.lr=0.1")

    # Assert
    assert outcome.status == 2
    assert "--set train.optimizer.lr cannot change on resume; only train.epochs" in outcome.err


def test_a_resume_to_fewer_epochs_than_the_checkpoint_holds_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    run_dir = finished_run(tmp_path, capsys)
    before = snapshot(run_dir)

    # Execute
    fewer = vfl(capsys, "run", "--resume", str(run_dir), "--set", "train.epochs=2", "--quiet")
    after_fewer = snapshot(run_dir)
    same = vfl(capsys, "run", "--resume", str(run_dir), "--set", "train.epochs=3", "--quiet")

    # Assert: refused and untouched; the same number of epochs (the negative control) is a run
    # that is already complete, so it only writes its summary again
    assert fewer.status == 2
    assert after_fewer == before
    assert fewer.err == (
        f"vfl: error: train.epochs: the checkpoint of {str(run_dir)!r} is at the end of epoch 3,"
        " so the run cannot end after 2 epochs; resume with --set train.epochs=3 or more\n"
    )
    assert same.status == 0, same.err
    assert [r["epoch"] for r in metrics(run_dir)] == [0, 1, 2, 3]
    assert snapshot(run_dir)["checkpoint.pt"] == before["checkpoint.pt"]
