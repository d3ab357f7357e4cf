"""``vfl predict`` as a real process: unseen categories are reported (or refused with
``--strict``), and the output never replaces the input.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest

from tests.cli.runs import vfl_process
from tests.run.variants import write_run_config

TIMEOUT_S = 120


def vfl(*args: str) -> subprocess.CompletedProcess[str]:
    return vfl_process(*args, timeout=TIMEOUT_S)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished one-epoch run over ``table.csv`` (its ``region`` is north, south or east)."""
    root = tmp_path_factory.mktemp("predict-inputs")
    config = write_run_config(root)
    result = vfl("run", str(config), "--run-dir", str(root / "run"), "--set", "train.epochs=1")
    assert result.returncode == 0, result.stderr
    return root / "run"


def new_rows(trained: Path, name: str, *, coded: int) -> Path:
    """20 rows of the training table without labels; the first ``coded`` have region codes."""
    frame = pd.read_csv(trained.parent / "table.csv").head(20).drop(columns=["default"])
    frame["region"] = frame["region"].astype(object)
    frame.loc[: coded - 1, "region"] = [str(1 + i % 3) for i in range(coded)]
    path = trained.parent / name
    frame.to_csv(path, index=False)
    return path


def test_unseen_categories_are_counted_per_column_and_named_per_row(
    trained: Path, tmp_path: Path
) -> None:
    # Prepare: region codes 1/2/3 where training saw north/south/east, in 7 rows
    data = new_rows(trained, "coded.csv", coded=7)
    out = tmp_path / "p.csv"

    # Execute
    result = vfl("predict", str(trained), "--data", str(data), "--out", str(out))

    # Assert: scored, with a console line counting them per column, and a column naming them
    assert result.returncode == 0, result.stderr
    assert (
        "vfl: note: 7 of 20 rows hold a category unseen in training, scored as all zeros"
        " one-hot (the training rule): 'region' 7" in result.stderr
    )
    frame = pd.read_csv(out, keep_default_na=False)
    assert frame["unseen_categories"].tolist() == ["region"] * 7 + [""] * 13


def test_strict_refuses_unseen_categories_and_writes_nothing(trained: Path, tmp_path: Path) -> None:
    # Prepare
    data = new_rows(trained, "coded-strict.csv", coded=2)
    out = tmp_path / "p.csv"

    # Execute
    result = vfl("predict", str(trained), "--data", str(data), "--out", str(out), "--strict")

    # Assert
    assert result.returncode == 2
    assert "vfl: error: --strict:" in result.stderr and "'region' 2 (IDs" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_rows_of_known_categories_get_no_note_even_with_strict(
    trained: Path, tmp_path: Path
) -> None:
    # Prepare: the negative control of both tests above
    data = new_rows(trained, "known.csv", coded=0)
    out = tmp_path / "p.csv"

    # Execute
    result = vfl("predict", str(trained), "--data", str(data), "--out", str(out), "--strict")

    # Assert
    assert result.returncode == 0, result.stderr
    assert "note" not in result.stderr
    assert "unseen_categories" not in pd.read_csv(out).columns


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_the_output_never_replaces_the_input(trained: Path, force: list[str]) -> None:
    # Prepare
    data = new_rows(trained, "input.csv", coded=0)
    before = data.read_bytes()

    # Execute
    result = vfl("predict", str(trained), "--data", str(data), "--out", str(data), *force)

    # Assert
    assert result.returncode == 2
    assert f"--out {str(data)!r} is the input {str(data)!r}" in result.stderr
    assert data.read_bytes() == before
