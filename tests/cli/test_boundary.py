"""Every failure ends ``vfl`` with one line on stderr and a status, never a traceback.

Expected failures (the file system, unreadable run files, bad input) exit 2 with a line that
names the file; anything else exits 1 with a line that says where its traceback was saved.
"""

from __future__ import annotations

import errno
import pathlib
import tempfile
from pathlib import Path

import pytest

from tests.cli.runs import Outcome, small_config, vfl
from tests.deploy.scenario import make_scenario

TRACEBACK = "Traceback (most recent call last)"


def assert_one_line(outcome: Outcome, status: int, *fragments: str) -> str:
    """``outcome`` exited with ``status`` and printed exactly one line holding ``fragments``."""
    assert outcome.status == status, outcome.err
    assert TRACEBACK not in outcome.err
    assert len(outcome.error_lines) == 1, outcome.err
    line = outcome.error_lines[0]
    for fragment in fragments:
        assert fragment in line, line
    return line


def test_an_output_folder_that_cannot_be_created_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: the output folder's parent refuses new entries (as a read-only folder does;
    # simulated, since tests may run as root, whom permissions do not stop)
    config = small_config(tmp_path)
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    real_mkdir = pathlib.Path.mkdir

    def refusing_mkdir(self: Path, *args: object, **kwargs: object) -> None:
        if self.parent == read_only:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pathlib.Path, "mkdir", refusing_mkdir)

    # Execute
    outcome = vfl(capsys, "run", str(config), "--run-dir", str(read_only / "run"), "--quiet")

    # Assert
    assert_one_line(outcome, 2, repr(str(read_only / "run")), "Permission denied")
    assert not (read_only / "run").exists()


@pytest.mark.parametrize("where", ["run-dir", "parent"])
def test_an_output_path_that_is_a_file_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    # Prepare: a file where the run folder, or its parent, should be
    config = small_config(tmp_path)
    blocker = tmp_path / "blocker"
    blocker.write_text("the user's file\n")
    run_dir = blocker if where == "run-dir" else blocker / "run"

    # Execute
    outcome = vfl(capsys, "run", str(config), "--run-dir", str(run_dir), "--quiet")

    # Assert
    assert_one_line(outcome, 2, repr(str(run_dir)))
    assert blocker.read_text() == "the user's file\n"


def damaged(whole: bytes, damage: str, folder: Path) -> bytes:
    """A checkpoint's bytes after ``damage``: cut short, emptied, overwritten, or replaced."""
    if damage == "truncated":
        return whole[: len(whole) // 2]
    if damage == "empty":
        return b""
    if damage == "garbage":
        return b"\x80\x02junk" + whole[7:64]
    import torch

    torch.save([1, 2] if damage == "not-a-dict" else {"epoch": 1}, folder / "other.pt")
    return (folder / "other.pt").read_bytes()


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("truncated", "cut short or corrupt"),
        ("empty", "cut short or corrupt"),
        ("garbage", "cut short or corrupt"),
        ("not-a-dict", "is not a vfl checkpoint: it holds no dictionary"),
        ("missing-keys", "is not a vfl checkpoint: it lacks ['elapsed', 'session', 'torch_rng']"),
    ],
)
def test_an_unreadable_checkpoint_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str, says: str
) -> None:
    # Prepare: a finished run whose checkpoint was then damaged
    run_dir = tmp_path / "run"
    assert vfl(capsys, "run", str(small_config(tmp_path)), "--run-dir", str(run_dir)).status == 0
    checkpoint = run_dir / "checkpoint.pt"
    broken = damaged(checkpoint.read_bytes(), damage, tmp_path)
    checkpoint.write_bytes(broken)

    # Execute
    outcome = vfl(capsys, "run", "--resume", str(run_dir), "--set", "train.epochs=4", "--quiet")

    # Assert
    assert_one_line(outcome, 2, repr(str(checkpoint)), says)
    assert checkpoint.read_bytes() == broken


def test_a_torn_last_metrics_line_is_dropped_on_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: a run killed while it appended a record (after its last checkpoint)
    run_dir = tmp_path / "run"
    assert vfl(capsys, "run", str(small_config(tmp_path)), "--run-dir", str(run_dir)).status == 0
    with (run_dir / "metrics.jsonl").open("a") as handle:
        handle.write('{"epoch": 4, "round": 40, "train_lo')

    # Execute
    outcome = vfl(capsys, "run", "--resume", str(run_dir), "--set", "train.epochs=4", "--quiet")

    # Assert
    assert outcome.status == 0, outcome.err
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert [line.split(",")[0] for line in lines] == [f'{{"epoch": {e}' for e in range(5)]


def test_a_corrupt_metrics_line_before_the_last_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: line 2 of 4 damaged (not a line cut short by a kill: that is always the last)
    run_dir = tmp_path / "run"
    assert vfl(capsys, "run", str(small_config(tmp_path)), "--run-dir", str(run_dir)).status == 0
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    lines[1] = lines[1][:20]
    (run_dir / "metrics.jsonl").write_text("\n".join(lines) + "\n")

    # Execute
    outcome = vfl(capsys, "run", "--resume", str(run_dir), "--set", "train.epochs=4", "--quiet")

    # Assert
    assert_one_line(outcome, 2, repr(str(run_dir / "metrics.jsonl")), "line 2")


def test_a_changed_digit_in_a_metrics_record_is_refused_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: line 2 still valid JSON, one digit changed (a flipped bit, or an edit)
    run_dir = tmp_path / "run"
    assert vfl(capsys, "run", str(small_config(tmp_path)), "--run-dir", str(run_dir)).status == 0
    metrics = run_dir / "metrics.jsonl"
    lines = metrics.read_text().splitlines()
    lines[1] = lines[1].replace('"epoch": 1', '"epoch": 7')
    metrics.write_text("\n".join(lines) + "\n")
    damaged = metrics.read_bytes()

    # Execute
    outcome = vfl(capsys, "run", "--resume", str(run_dir), "--set", "train.epochs=4", "--quiet")

    # Assert: one line naming the file, the line and the checksum; nothing shortened or copied
    assert_one_line(outcome, 2, repr(str(metrics)), "line 2 (byte", "checksum")
    assert metrics.read_bytes() == damaged
    assert not list(run_dir.glob("metrics.jsonl.resumed-*"))


def test_plotting_a_run_with_a_torn_metrics_line_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    run_dir = tmp_path / "run"
    assert vfl(capsys, "run", str(small_config(tmp_path)), "--run-dir", str(run_dir)).status == 0
    with (run_dir / "metrics.jsonl").open("a") as handle:
        handle.write('{"epoch": 4, "rou')

    # Execute
    outcome = vfl(capsys, "plot", str(run_dir))

    # Assert: the line names the file and the line that is cut short
    assert_one_line(outcome, 2, str(run_dir / "metrics.jsonl"), "is not a JSON record")


def test_a_missing_tls_certificate_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: a deployment whose server certificate is not where the config says
    scenario = make_scenario(tmp_path / "deployment")
    certificate = scenario.pki.server_cert
    certificate.unlink()

    # Execute
    outcome = vfl(capsys, "server", "--config", str(scenario.run_toml), "--run-dir", str(tmp_path))

    # Assert
    assert_one_line(outcome, 2, repr(str(certificate)), "no such file", "deployment.tls.cert")


def test_a_bug_in_a_run_saves_its_traceback_in_the_run_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: a bug that strikes after training, while the summary is written
    from vfl.run import runner

    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(runner, "finish_summary", broken)
    run_dir = tmp_path / "run"

    # Execute
    outcome = vfl(capsys, "run", str(small_config(tmp_path)), "--run-dir", str(run_dir), "--quiet")

    # Assert
    traceback_file = run_dir / "traceback.txt"
    assert_one_line(
        outcome, 1, "internal error: ZeroDivisionError: division by zero", str(traceback_file)
    )
    assert "in broken" in traceback_file.read_text()
    assert (run_dir / "error.txt").read_text() == "ZeroDivisionError: division by zero\n"


def test_a_bug_outside_a_run_saves_its_traceback_in_a_temporary_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    from vfl.data import registry

    def broken() -> None:
        raise KeyError("nowhere")

    monkeypatch.setattr(registry, "list_datasets", broken)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    # Execute
    outcome = vfl(capsys, "data", "list")

    # Assert
    line = assert_one_line(outcome, 1, "internal error: KeyError: 'nowhere'", "full traceback in")
    saved = Path(line.rpartition("full traceback in ")[2].rstrip(")"))
    assert saved.parent == tmp_path
    assert "in broken" in saved.read_text()
