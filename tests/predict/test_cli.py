"""``vfl predict``: a CSV of predictions keyed by ID, metrics when the rows hold labels."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import vfl
from tests.predict.test_bundles import trained_run
from vfl.cli import main
from vfl.errors import DataError


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


def test_python_predict_of_a_dataframe_equals_vfl_predict_of_the_same_rows(
    tmp_path: Path,
) -> None:
    # Prepare: new rows (with labels) as a file for `vfl predict`, and as a DataFrame
    run_dir = trained_run(tmp_path)
    new = pd.read_csv(tmp_path / "table.csv").head(40)
    new.to_csv(tmp_path / "new.csv", index=False)
    cli_out = tmp_path / "cli.csv"
    assert (
        main(["predict", str(run_dir), "--data", str(tmp_path / "new.csv"), "--out", str(cli_out)])
        == 0
    )
    cli = pd.read_csv(cli_out)
    columns = ["probability_no", "probability_yes"]

    # Execute
    predictions = vfl.predict(run_dir, data=new)
    model = vfl.load_model(run_dir)
    unlabelled = model.predict(new.drop(columns=["default"]))
    proba = model.predict_proba(new.drop(columns=["default"]))

    # Assert: the same rows, IDs, classes and probabilities (to 1e-6) as the CLI's
    frame = predictions.to_frame()
    assert frame["id"].tolist() == cli["id"].tolist() == new["id"].tolist()
    np.testing.assert_allclose(frame[columns], cli[columns], rtol=0, atol=1e-6)
    np.testing.assert_allclose(proba, cli[columns].to_numpy(), rtol=0, atol=1e-6)
    assert predictions.labels.tolist() == cli["predicted"].tolist()
    assert predictions.metrics is not None and unlabelled.metrics is None
    assert unlabelled.ids.tolist() == new["id"].tolist()
    # Control: other rows give other probabilities, so the comparison can fail
    other = model.predict_proba(new.iloc[::-1].drop(columns=["default"]))
    assert np.abs(other - proba).max() > 1e-3


def test_a_dataframe_missing_a_column_is_refused_naming_it(tmp_path: Path) -> None:
    # Prepare
    run_dir = trained_run(tmp_path)
    new = pd.read_csv(tmp_path / "table.csv").head(5).drop(columns=["debt"])

    # Execute / Assert
    with pytest.raises(DataError, match=r"no column\(s\) \['debt'\]"):
        vfl.predict(run_dir, data=new)
    with pytest.raises(DataError, match="pandas DataFrame"):
        vfl.load_model(run_dir).rows(new.to_numpy())
