"""``vfl predict``: a CSV of predictions keyed by ID, metrics when the rows hold labels."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.predict.test_bundles import trained_run
from vfl.cli import main


def test_predict_writes_one_row_per_test_id_and_matches_the_last_evaluation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    run_dir = trained_run(tmp_path)
    last = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    capsys.readouterr()

    # Execute
    status = main(["predict", str(run_dir)])

    # Assert
    assert status == 0
    frame = pd.read_csv(run_dir / "predictions.csv")
    assert list(frame.columns) == ["id", "predicted", "probability_no", "probability_yes"]
    assert frame["id"].is_unique and len(frame) == 80
    assert f"accuracy {last['test_accuracy']:.4f}" in capsys.readouterr().out


def test_predict_reads_new_rows_with_every_partys_own_columns(tmp_path: Path) -> None:
    # Prepare: new rows of the same table, without labels
    run_dir = trained_run(tmp_path)
    new = pd.read_csv(tmp_path / "table.csv").head(25).drop(columns=["default"])
    new.to_csv(tmp_path / "new.csv", index=False)

    # Execute
    status = main(
        [
            "predict",
            str(run_dir),
            "--data",
            str(tmp_path / "new.csv"),
            "--out",
            str(tmp_path / "p.csv"),
        ]
    )

    # Assert
    assert status == 0
    frame = pd.read_csv(tmp_path / "p.csv")
    assert frame["id"].tolist() == new["id"].tolist()
    total = frame["probability_no"] + frame["probability_yes"]
    assert (total - 1).abs().max() < 1e-9


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda f: f.drop(columns=["debt"]), "no column(s) ['debt']"),
        (lambda f: f.assign(default="maybe"), "label column 'default' holds ['maybe']"),
    ],
)
def test_a_table_that_does_not_fit_the_model_names_what_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: object, named: str
) -> None:
    # Prepare
    run_dir = trained_run(tmp_path)
    bad = edit(pd.read_csv(tmp_path / "table.csv").head(5))  # type: ignore[operator]
    bad.to_csv(tmp_path / "bad.csv", index=False)

    # Execute
    status = main(["predict", str(run_dir), "--data", str(tmp_path / "bad.csv")])

    # Assert
    assert status == 2
    assert named in capsys.readouterr().err
    assert not (run_dir / "predictions.csv").exists()


def test_predict_never_replaces_a_file_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    run_dir = trained_run(tmp_path)
    (run_dir / "predictions.csv").write_text("mine\n")

    # Execute / Assert
    assert main(["predict", str(run_dir)]) == 2
    assert (run_dir / "predictions.csv").read_text() == "mine\n"
    assert "--force" in capsys.readouterr().err
    assert main(["predict", str(run_dir), "--force"]) == 0
