"""``privacy.max_epsilon`` across resumes, as a user meets it: ``vfl`` run as a real process.

- a resume or extension of a run that has already spent more than the budget, or whose next
  epoch would, is refused (exit 2) naming the epsilon spent and the budget, and changes no file
  of the run folder (hashed before and after) and prints no ``run directory:`` line;
- a new run the budget refuses prints no ``run directory:`` line for a folder it never makes;
- a run stopped by the budget prints one line naming it and exits ``BUDGET_STOPPED`` (3); its
  summary names the epochs its metrics show.

The config: three parties (a concatenating head, so 3 noised rows per sample and epoch) and
gradient noise z = 4; epsilon after K epochs is dp-accounting's PLD epsilon of 3K releases.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.runs import metrics, vfl
from tests.run.variants import write_run_config
from vfl.cli import BUDGET_STOPPED, USER_ERROR

DELTA = 1e-5
NOISE = ("--set", "privacy.gradient_noise.noise_multiplier=4")


def _label_epsilon(epochs: int) -> float:
    """Independently: dp-accounting's PLD accountant for 3 Gaussian releases per epoch."""
    from dp_accounting import GaussianDpEvent
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

    from vfl.privacy.pld import discretization

    releases = ((4.0, 2.0, 3 * epochs),)
    accountant = PLDAccountant(value_discretization_interval=discretization(releases))
    accountant.compose(GaussianDpEvent(4.0 / 2.0), 3 * epochs)
    return float(accountant.get_epsilon(DELTA))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    """``vfl ARGS`` in a process of its own."""
    command = [sys.executable, "-m", "vfl.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)


def _digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder``, by relative path: SHA-256 of its bytes and its mtime."""
    return {
        str(path.relative_to(folder)): f"{hashlib.sha256(path.read_bytes()).hexdigest()}"
        f" {path.stat().st_mtime_ns}"
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _two_epochs(tmp_path: Path, capsys: pytest.CaptureFixture[str], *sets: str) -> Path:
    config, run_dir = write_run_config(tmp_path), tmp_path / "run"
    made = vfl(capsys, "run", str(config), "--run-dir", str(run_dir), "--quiet", *NOISE, *sets)
    assert made.status == 0, made.err
    return run_dir


def test_resuming_a_run_already_over_a_new_budget_is_refused_and_changes_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: 2 epochs without a budget, then a budget that 1 epoch fits
    run_dir = _two_epochs(tmp_path, capsys, "--set", "train.epochs=2")
    budget = (_label_epsilon(1) + _label_epsilon(2)) / 2
    before = _digest(run_dir)

    # Execute
    done = _run("run", "--resume", str(run_dir), "--set", f"privacy.max_epsilon={budget}")

    # Assert
    assert done.returncode == USER_ERROR == 2, done.stderr
    assert "run directory:" not in done.stderr
    assert f"has already spent label_epsilon {_label_epsilon(2):.4g} at delta 1e-05" in done.stderr
    assert f"over the budget of {budget:g}" in done.stderr
    assert "nothing was changed" in done.stderr
    assert _digest(run_dir) == before


def test_extending_a_run_whose_next_epoch_would_pass_the_budget_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: 2 epochs within a budget that 2 epochs fit and 3 do not
    budget = (_label_epsilon(2) + _label_epsilon(3)) / 2
    run_dir = _two_epochs(
        tmp_path, capsys, "--set", "train.epochs=2", "--set", f"privacy.max_epsilon={budget}"
    )
    before = _digest(run_dir)

    # Execute (in this process: the real process of the test above is refused the same way)
    done = vfl(capsys, "run", "--resume", str(run_dir), "--set", "train.epochs=4")

    # Assert
    assert done.status == 2, done.err
    assert "run directory:" not in done.err
    assert f"epoch 3 would spend label_epsilon {_label_epsilon(3):.4g}" in done.err
    assert "no further epoch fits" in done.err
    assert _digest(run_dir) == before


def test_a_run_stopped_by_the_budget_says_so_in_one_line_and_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: 1 epoch within a budget that 2 epochs fit
    budget = (_label_epsilon(2) + _label_epsilon(3)) / 2
    run_dir = _two_epochs(
        tmp_path, capsys, "--set", "train.epochs=1", "--set", f"privacy.max_epsilon={budget}"
    )

    # Execute: extend it to 4 epochs; the budget stops it after 2
    done = _run("run", "--resume", str(run_dir), "--set", "train.epochs=4")

    # Assert
    assert done.returncode == BUDGET_STOPPED == 3, done.stderr
    lines = [line for line in done.stderr.splitlines() if "privacy budget" in line]
    assert lines == [
        f"vfl: stopped at the privacy budget after 2 of 4 planned epochs (privacy.max_epsilon ="
        f" {budget:g} at privacy.delta = 1e-05); results in {run_dir}"
    ]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["epochs"] == max(r["epoch"] for r in metrics(run_dir)) == 2
    assert summary["privacy"]["budget"]["stopped"] is True
    assert summary["privacy"]["label_epsilon"] == pytest.approx(_label_epsilon(2), rel=1e-6)
    assert summary["privacy"]["label_epsilon"] <= budget


def test_a_new_run_refused_by_its_budget_names_no_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: 4 planned epochs, a budget that fits 2 (negative control below: within it)
    config, run_dir = write_run_config(tmp_path), tmp_path / "run"
    budget = f"privacy.max_epsilon={(_label_epsilon(2) + _label_epsilon(3)) / 2}"
    common = ("run", str(config), "--run-dir", str(run_dir), *NOISE, "--set", budget)

    # Execute
    refused = vfl(capsys, *common, "--set", "train.epochs=4")
    accepted = vfl(capsys, *common, "--set", "train.epochs=2")

    # Assert
    assert refused.status == 2
    assert "at most 2 epochs fit (--set train.epochs=2)" in refused.err
    assert "run directory:" not in refused.err
    assert accepted.status == 0, accepted.err
    assert f"run directory: {run_dir}" in accepted.err
