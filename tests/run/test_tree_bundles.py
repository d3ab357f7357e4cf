"""A tree run's bundles: each holder's own knowledge, and predictions from them equal to the
in-process model's; a damaged or mismatched bundle is refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import vfl
from tests.boost.helpers import TEST_KEY_BITS
from tests.cli.runs import vfl_process
from tests.run.trees import tree_config
from vfl.boost import train_secureboost
from vfl.config import load_config
from vfl.errors import ConfigError, DataError
from vfl.run.boosting import params_of
from vfl.run.data import prepare
from vfl.run.runner import train
from vfl.run.tree_data import tree_data


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("trees")
    train(load_config(tree_config(folder)), folder / "run")
    return folder


def test_each_holder_bundle_holds_only_its_own_knowledge(trained: Path) -> None:
    # Prepare
    bundle = trained / "run" / "bundle"

    # Execute
    trees = json.loads((bundle / "server" / "trees.json").read_text())
    holder = json.loads((bundle / "party-2" / "splits.json").read_text())

    # Assert: the label holder has shapes, owners, records and weights, no passive threshold
    assert set(trees) == {"fingerprint", "objective", "base_score", "base_margin", "trees"}
    owners = {node[1] for tree in trees["trees"] for node in tree} - {-1}
    assert owners <= {1, 2, 3} and owners - {1}
    assert set(holder) == {"fingerprint", "splits"}  # its rules: column, bin, threshold, missing
    assert not any(p.suffix in (".pt", ".pkl") for p in bundle.rglob("*"))


def test_bundle_predictions_equal_the_in_process_model(trained: Path) -> None:
    # Prepare: the same trees grown by the Python API from the same blocks
    run_dir = trained / "run"
    config = load_config(tree_config(trained))
    dataset, _, vertical = prepare(config)
    data = tree_data(config, vertical)
    in_process = train_secureboost(
        data.train_labels,
        data.train,
        params_of(config),
        active_party=1,
        key_bits=TEST_KEY_BITS,
        insecure_test_key=True,
        workers=1,
    )
    expected = in_process.predict("test", data.test)

    # Execute: the Python API and the command, from the bundles
    from_api = vfl.predict(run_dir).probabilities[:, 1]
    table = trained / "credit.csv"
    done = vfl_process("predict", str(run_dir), "--data", str(table), timeout=300)
    model = vfl.load_model(run_dir)
    from_frame = model.predict(pd.read_csv(table)).probabilities[:, 1]

    # Assert
    assert np.abs(from_api - expected).max() <= 1e-9
    assert done.returncode == 0, done.stderr
    written = pd.read_csv(run_dir / "predictions.csv")
    assert np.abs(written["probability_yes"].to_numpy() - from_frame).max() <= 1e-9
    test_ids = dataset.test.ids
    by_id = dict(zip(written["id"], written["probability_yes"], strict=True))
    assert np.abs(np.array([by_id[i] for i in test_ids]) - expected).max() <= 1e-9


def test_a_damaged_bundle_file_is_refused_in_one_line(trained: Path, tmp_path: Path) -> None:
    # Prepare: a threshold edited in a copy of the run
    run_dir = tmp_path / "run"
    shutil.copytree(trained / "run", run_dir)
    splits = run_dir / "bundle" / "party-2" / "splits.json"
    splits.write_text(splits.read_text().replace("]", " ]", 1))

    # Execute
    out = tmp_path / "predictions.csv"
    done = vfl_process("predict", str(run_dir), "--out", str(out), timeout=300)

    # Assert
    assert done.returncode != 0
    assert not out.exists()
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "splits.json differs from the checksum" in lines[0]


def test_a_bundle_of_another_run_is_refused(trained: Path, tmp_path: Path) -> None:
    # Prepare: party 2's bundle from a run with other trees
    other = tmp_path / "other"
    train(load_config(tree_config(tmp_path, trees=1)), other)
    run_dir = tmp_path / "run"
    shutil.copytree(trained / "run", run_dir)
    shutil.rmtree(run_dir / "bundle" / "party-2")
    shutil.copytree(other / "bundle" / "party-2", run_dir / "bundle" / "party-2")

    # Execute
    with pytest.raises(ConfigError) as error:
        vfl.load_model(run_dir)

    # Assert
    assert "come from different runs" in str(error.value)


def test_a_missing_model_file_is_named(trained: Path, tmp_path: Path) -> None:
    # Prepare
    run_dir = tmp_path / "run"
    shutil.copytree(trained / "run", run_dir)
    (run_dir / "bundle" / "server" / "trees.json").unlink()

    # Execute
    with pytest.raises(DataError, match=r"trees\.json is missing"):
        vfl.load_model(run_dir)
