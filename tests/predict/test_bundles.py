"""Model bundles: no pickle, one run's parts only, and predictions equal to the trained model's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch

from tests.run.variants import VARIANTS, write_run_config
from vfl.cli import main
from vfl.config import load_config
from vfl.errors import ConfigError, DataError
from vfl.protocol.loop import ServerLoop
from vfl.run.bundles import BUNDLE, export_run
from vfl.run.compose import build_session
from vfl.run.data import prepare
from vfl.run.fit import fit
from vfl.run.predict import Model, probabilities
from vfl.wire import SPLIT_TEST

PREDICTED = ["split-learning", "pbm-secure-aggregation", "lvfl-schedule", "cvfl-shared-lattice"]


def trained_run(folder: Path, *overrides: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = write_run_config(folder)
    sets = [arg for item in ("train.epochs=2", *overrides) for arg in ("--set", item)]
    assert main(["run", str(config), "--run-dir", str(folder / "run"), *sets]) == 0
    return folder / "run"


@pytest.mark.parametrize("variant", PREDICTED)
def test_bundle_predictions_equal_the_trained_models(tmp_path: Path, variant: str) -> None:
    # Prepare: train in process, keep the session, export its bundles
    config = load_config(write_run_config(tmp_path), ["train.epochs=2", *VARIANTS[variant]])
    dataset, partition, data = prepare(config)
    session = build_session(config, data)
    fit(session, epochs=2, progress=False)
    loop = session.trainer
    assert isinstance(loop, ServerLoop)
    expected = probabilities(loop.server.task, loop.logits(SPLIT_TEST))
    export_run(
        tmp_path / BUNDLE,
        session,
        config,
        partition=partition,
        encoder=dataset.encoder,
        classes=dataset.classes,
    )

    # Execute
    model = Model.load(tmp_path)
    predictions = model.predict(list(data.test_blocks), labels=data.test_labels)

    # Assert
    torch.testing.assert_close(
        torch.from_numpy(predictions.probabilities), torch.from_numpy(expected), atol=1e-6, rtol=0
    )
    assert predictions.metrics is not None
    assert predictions.metrics == pytest.approx(loop.evaluate(SPLIT_TEST), abs=1e-6)


def test_predictions_on_the_test_split_match_the_runs_last_evaluation(tmp_path: Path) -> None:
    # Prepare
    run_dir = trained_run(tmp_path)
    config = load_config(run_dir / "config.toml")
    _, _, data = prepare(config)
    last = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])

    # Execute
    predictions = Model.load(run_dir).predict(list(data.test_blocks), labels=data.test_labels)

    # Assert
    assert predictions.metrics is not None
    assert predictions.metrics["accuracy"] == pytest.approx(last["test_accuracy"], abs=1e-6)
    assert predictions.metrics["loss"] == pytest.approx(last["test_loss"], abs=1e-6)


def test_each_party_transforms_raw_rows_with_its_own_encoding(tmp_path: Path) -> None:
    # Prepare: the raw test rows of the table the run trained on
    run_dir = trained_run(tmp_path)
    config = load_config(run_dir / "config.toml")
    dataset, _, data = prepare(config)
    raw = pd.read_csv(tmp_path / "table.csv").set_index("id").loc[list(dataset.test.ids)]

    # Execute
    blocks = Model.load(run_dir).features(raw.reset_index())

    # Assert: the same features the run's own encoding made
    for block, expected in zip(blocks, data.test_blocks, strict=True):
        torch.testing.assert_close(block, expected)


def test_a_weights_file_replaced_by_a_pickle_is_refused(tmp_path: Path) -> None:
    # Prepare
    run_dir = trained_run(tmp_path)
    weights = run_dir / BUNDLE / "party-1" / "weights.safetensors"
    torch.save({"anything": torch.zeros(2)}, weights)  # a pickle file

    # Execute / Assert
    with pytest.raises(DataError, match=r"party-1/weights\.safetensors is not a safetensors file"):
        Model.load(run_dir)


def test_parts_of_two_runs_are_never_combined(tmp_path: Path) -> None:
    # Prepare: two runs that differ in one setting
    first = trained_run(tmp_path / "a")
    second = trained_run(tmp_path / "b", "train.seed=1")
    shutil.rmtree(first / BUNDLE / "party-2")
    shutil.copytree(second / BUNDLE / "party-2", first / BUNDLE / "party-2")

    # Execute / Assert
    with pytest.raises(ConfigError, match="come from different runs"):
        Model.load(first)


@pytest.mark.parametrize(
    "name", ["party-2/weights.safetensors", "party-1/config.toml", "party-2/preprocessing.json"]
)
def test_a_file_swapped_for_another_runs_is_refused_naming_it(tmp_path: Path, name: str) -> None:
    # Prepare: one file of the first run's bundle replaced by the same file of another run,
    # whose manifest still names the first run (weights that fit the same architecture)
    first = trained_run(tmp_path / "a")
    second = trained_run(tmp_path / "b", "train.seed=1")
    shutil.copy(second / BUNDLE / name, first / BUNDLE / name)

    # Execute / Assert
    with pytest.raises(DataError, match=f"{name} comes from another run") as caught:
        Model.load(first)
    assert str(first / BUNDLE / name) in str(caught.value)


def test_one_runs_bundles_load_together(tmp_path: Path) -> None:
    # Negative control for the refusal above
    assert Model.load(trained_run(tmp_path)).classes == ("no", "yes")
