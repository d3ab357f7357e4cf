"""A run folder says how its run ended, and a new run never writes into a folder in use."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.runs import small_config, snapshot, vfl

IN_THE_WAY: dict[str, tuple[dict[str, str], str]] = {
    "a finished run without a checkpoint": (
        {"summary.json": "{}\n", "metrics.jsonl": "", "config.toml": ""},
        "already holds a run, without a checkpoint to resume from",
    ),
    "a run that only left its summary": ({"summary.json": "{}\n"}, "already holds a run"),
    "a failed run": ({"error.txt": "it failed\n", "config.toml": ""}, "already holds a run"),
    "the user's own config.toml": (
        {"config.toml": '[data]\nname = "mine"\n'},
        "is not empty ('config.toml') and is not a vfl run",
    ),
    "the user's notes": ({"notes.md": "keep me\n"}, "is not empty ('notes.md')"),
}


@pytest.mark.parametrize("case", list(IN_THE_WAY))
def test_a_new_run_refuses_a_folder_that_holds_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    # Prepare
    files, message = IN_THE_WAY[case]
    run_dir = tmp_path / "taken"
    run_dir.mkdir()
    for name, text in files.items():
        (run_dir / name).write_text(text)
    before = snapshot(run_dir)

    # Execute
    outcome = vfl(capsys, "run", str(small_config(tmp_path)), "--run-dir", str(run_dir))

    # Assert: refused, named, and not one byte changed
    assert outcome.status == 2
    assert message in outcome.err
    assert repr(str(run_dir)) in outcome.err
    assert snapshot(run_dir) == before


def test_a_new_run_may_use_an_empty_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: the negative control of the refusals above
    run_dir = tmp_path / "empty"
    run_dir.mkdir()

    # Execute
    outcome = vfl(capsys, "run", str(small_config(tmp_path)), "--run-dir", str(run_dir), "--quiet")

    # Assert
    assert outcome.status == 0, outcome.err
    assert (run_dir / "summary.json").exists()


def test_a_run_with_the_name_of_a_finished_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: output.name fixes the folder, so the same command twice aims at the same folder
    config = small_config(tmp_path)
    named = ["--set", "output.name=experiment", "--set", "train.checkpoint=false", "--quiet"]
    assert vfl(capsys, "run", str(config), *named).status == 0
    run_dir = tmp_path / "runs" / "experiment"
    before = snapshot(run_dir)

    # Execute
    outcome = vfl(capsys, "run", str(config), *named)

    # Assert
    assert outcome.status == 2
    assert f"run directory {str(run_dir)!r} already holds a run" in outcome.err
    assert snapshot(run_dir) == before


def test_a_failed_run_says_so_in_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: a learning rate so large that the models diverge within the first epoch
    config = small_config(tmp_path)
    run_dir = tmp_path / "run"
    sets = ["--set", "train.optimizer.name=sgd", "--set", "train.optimizer.lr=1e30"]

    # Execute
    failed = vfl(capsys, "run", str(config), "--run-dir", str(run_dir), "--quiet", *sets)

    # Assert: one line, error.txt says the same; an expected error leaves no traceback file
    assert failed.status == 2
    error = (run_dir / "error.txt").read_text()
    assert "non-finite" in error
    assert failed.err == f"vfl: error: {error}"
    assert not (run_dir / "traceback.txt").exists()
    assert not (run_dir / "summary.json").exists()


def test_a_resume_that_finishes_the_run_removes_its_error_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: a run whose last attempt failed after its checkpoint of epoch 3
    run_dir = tmp_path / "run"
    assert vfl(capsys, "run", str(small_config(tmp_path)), "--run-dir", str(run_dir)).status == 0
    (run_dir / "error.txt").write_text("an earlier attempt failed\n")
    (run_dir / "traceback.txt").write_text("Traceback (most recent call last): ...\n")

    # Execute
    outcome = vfl(capsys, "run", "--resume", str(run_dir), "--set", "train.epochs=4", "--quiet")

    # Assert
    assert outcome.status == 0, outcome.err
    assert not (run_dir / "error.txt").exists()
    assert not (run_dir / "traceback.txt").exists()


def test_resuming_a_folder_that_is_not_a_run_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    folder = tmp_path / "not-a-run"
    folder.mkdir()

    # Execute
    missing = vfl(capsys, "run", "--resume", str(tmp_path / "nowhere"))
    empty = vfl(capsys, "run", "--resume", str(folder))

    # Assert
    assert (missing.status, empty.status) == (2, 2)
    assert f"--resume {str(tmp_path / 'nowhere')!r}: does not exist" in missing.err
    assert f"--resume {str(folder)!r}: holds no config.toml" in empty.err
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("metric", ["test_auc", "test_f1"])
def test_a_target_metric_the_task_lacks_is_refused_before_the_folder_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], metric: str
) -> None:
    # Prepare: the table's 3-valued region column as the label (a 3-class task)
    config = small_config(tmp_path)
    three_classes = [
        "--set",
        "data.label=region",
        "--set",
        'partition.groups=[["income", "age"], ["debt", "default"]]',
    ]
    run_dir = tmp_path / "run"

    # Execute
    outcome = vfl(
        capsys, "run", str(config), "--run-dir", str(run_dir), *three_classes,
        "--set", f"target.metric={metric}", "--set", "target.value=0.9",
    )  # fmt: skip

    # Assert
    assert outcome.status == 2
    assert outcome.error_lines == [
        f"vfl: error: target.metric: '{metric}' is reported for binary tasks only, and this data"
        " set has 3 classes: use 'test_accuracy', 'test_loss', or make the task binary with"
        " data.positive_classes"
    ]
    assert not run_dir.exists()


def test_a_target_metric_the_task_has_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: the negative control: the binary task reports test_auc
    config = small_config(tmp_path)
    run_dir = tmp_path / "run"
    target = ["--set", "target.metric=test_auc", "--set", "target.value=0.5"]

    # Execute
    outcome = vfl(capsys, "run", str(config), "--run-dir", str(run_dir), "--quiet", *target)

    # Assert
    assert outcome.status == 0, outcome.err
    assert (run_dir / "summary.json").exists()
