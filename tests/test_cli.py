"""The command line, end to end on a small table written by the test."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vfl.cli import main


def write_table(path: Path, rows: int = 400, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "id": [f"c{i:04d}" for i in range(rows)],
            "income": rng.normal(50, 10, rows),
            "debt": rng.normal(20, 5, rows),
            "region": rng.choice(["north", "south", "east"], rows),
            "age": rng.integers(18, 80, rows),
        }
    )
    score = (frame["income"] - 50) / 10 - (frame["debt"] - 20) / 5 + (frame["region"] == "east")
    frame["default"] = np.where(score + rng.normal(0, 0.5, rows) > 0, "yes", "no")
    frame.to_csv(path, index=False)
    return path


def write_config(tmp_path: Path, table: Path, **extra: str) -> Path:
    config = tmp_path / "run.toml"
    lines = [
        "[data]",
        'name = "table"',
        f'path = "{table}"',
        'label = "default"',
        'id_column = "id"',
        "[partition]",
        'scheme = "columns"',
        "num_parties = 2",
        'groups = [["income", "age"], ["debt", "region"]]',
        "[model.bottom]",
        "hidden = [8]",
        "embedding_dim = 4",
        "[train]",
        "epochs = 3",
        "batch_size = 32",
        "[train.optimizer]",
        "lr = 0.02",
        "[output]",
        f'dir = "{tmp_path / "runs"}"',
        "progress = false",
    ]
    config.write_text("\n".join(lines) + "\n")
    return config


def test_run_writes_a_complete_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    config = write_config(tmp_path, write_table(tmp_path / "credit.csv"))
    run_dir = tmp_path / "run"

    # Execute
    status = main(
        ["run", str(config), "--run-dir", str(run_dir), "--set", "train.seed=1", "--json"]
    )

    # Assert
    assert status == 0
    assert {p.name for p in run_dir.iterdir()} >= {
        "config.toml",
        "partition.json",
        "metrics.jsonl",
        "summary.json",
        "ledger.csv",
        "checkpoint.pt",
    }
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in records] == [0, 1, 2, 3]
    assert records[0]["bytes_up"] == records[0]["bytes_down"] == 0  # the untrained model
    assert {"test_accuracy", "test_f1", "test_auc", "bytes_up", "bytes_down"} <= records[1].keys()
    summary = json.loads(capsys.readouterr().out)
    assert summary == json.loads((run_dir / "summary.json").read_text())
    assert summary["final"]["test_auc"] > 0.8
    assert "train.seed" not in (run_dir / "config.toml").read_text()  # TOML tables, not keys
    assert "seed = 1" in (run_dir / "config.toml").read_text()
    partition = json.loads((run_dir / "partition.json").read_text())
    assert partition["views"][1]["column_names"] == [
        "debt",
        "region=east",
        "region=north",
        "region=south",
    ]


def test_resume_continues_from_the_checkpoint(tmp_path: Path) -> None:
    # Prepare: a 3-epoch run, then ask for 5 epochs of the same run
    config = write_config(tmp_path, write_table(tmp_path / "credit.csv"))
    run_dir = tmp_path / "run"
    main(["run", str(config), "--run-dir", str(run_dir)])

    # Execute
    status = main(["run", "--resume", str(run_dir), "--set", "train.epochs=5"])

    # Assert
    assert status == 0
    epochs = [
        json.loads(line)["epoch"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()
    ]
    assert epochs == [0, 1, 2, 3, 4, 5]


def test_resume_refuses_to_change_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, write_table(tmp_path / "credit.csv"))
    main(["run", str(config), "--run-dir", str(tmp_path / "run")])
    status = main(["run", "--resume", str(tmp_path / "run"), "--set", "model.bottom.hidden=[9]"])
    assert status == 2
    assert "model.bottom.hidden cannot change on resume" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("train.epochs=0", "train.epochs: must be >= 1"),
        ('partition.groups=[["income"], ["debt"]]', "leave 2 column.s. with no party: region, age"),
        ("data.label=missing", "label column 'missing'"),
        ("model.bottom.kind=cnn", "needs image blocks"),
    ],
)
def test_bad_runs_exit_2_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], override: str, message: str
) -> None:
    # Prepare
    config = write_config(tmp_path, write_table(tmp_path / "credit.csv"))

    # Execute
    status = main(["run", str(config), "--run-dir", str(tmp_path / "run"), "--set", override])

    # Assert
    assert status == 2
    assert re.search(message, capsys.readouterr().err)


def test_missing_data_set_names_the_fetch_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    monkeypatch.setenv("VFL_DATA_DIR", str(tmp_path / "empty-cache"))

    # Execute
    status = main(
        [
            "run",
            "--set",
            "data.name=fashion-mnist",
            "--set",
            "output.progress=false",
            str(Path(__file__).parents[1] / "examples/fashion_mnist.toml"),
        ]
    )

    # Assert
    assert status == 2
    assert "vfl data fetch fashion-mnist" in capsys.readouterr().err


def test_data_list_shows_every_registered_data_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VFL_DATA_DIR", str(tmp_path))
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("mnist", "fashion-mnist", "adult", "cifar10", "default-credit"):
        assert name in out


def test_run_without_a_config_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run"]) == 2
    assert "needs a CONFIG file" in capsys.readouterr().err


def test_a_second_run_into_the_same_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    config = write_config(tmp_path, write_table(tmp_path / "credit.csv"))
    main(["run", str(config), "--run-dir", str(tmp_path / "run")])

    # Execute
    status = main(["run", str(config), "--run-dir", str(tmp_path / "run")])

    # Assert
    assert status == 2
    assert "already holds a run; continue it with `vfl run --resume" in capsys.readouterr().err


def test_a_missing_optional_dependency_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: matplotlib is not installed (an import of it fails)
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.delitem(sys.modules, "vfl.experiments.plots", raising=False)
    monkeypatch.delitem(sys.modules, "vfl.experiments.report", raising=False)

    # Execute
    status = main(["plot", "no-such-sweep"])

    # Assert
    assert status == 2
    error = capsys.readouterr().err
    assert "pip install 'vfl[plots]'" in error
    assert "matplotlib" in error
