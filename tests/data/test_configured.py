"""The [data] table: keys a data set does not read are refused; data.path is a folder or a file."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from vfl.config import DataConfig
from vfl.data.configured import load_configured
from vfl.errors import ConfigError, DataError

from .fakes import credit_frame, write_adult, write_cifar, write_mnist

DEFAULTS = dataclasses.asdict(DataConfig())


def load(**settings: Any) -> Any:
    """``load_configured`` with a ``[data]`` table of ``settings`` over the defaults."""
    config = DataConfig(**settings)
    return load_configured(config.name, dataclasses.asdict(config), defaults=DEFAULTS)


def write_csv(path: Path, rows: int) -> Path:
    frame = pd.DataFrame({"x": np.arange(rows, dtype=float), "y": ["a", "b"] * (rows // 2)})
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("name", "key", "value", "reads"),
    [
        ("adult", "label", "income", "data.path"),
        ("adult", "id_column", "id", "data.path"),
        ("mnist", "test_path", "t.csv", "data.path"),
        ("mnist", "test_fraction", 0.3, "data.path"),
        ("mnist", "bad_numbers", "missing", "data.path"),
        ("default-credit", "label", "y", "data.path, data.test_fraction, data.bad_numbers"),
    ],
)
def test_a_key_the_data_set_does_not_read_is_refused_by_name(
    name: str, key: str, value: Any, reads: str
) -> None:
    # Execute
    with pytest.raises(ConfigError) as caught:
        load(name=name, **{key: value})

    # Assert
    assert str(caught.value) == (
        f"data.{key} = {value!r} is not read by data set {name!r}; it reads {reads}: remove"
        f" data.{key}"
    )


def test_a_test_fraction_next_to_a_test_path_is_refused(tmp_path: Path) -> None:
    # Prepare
    train, test = write_csv(tmp_path / "a.csv", 10), write_csv(tmp_path / "b.csv", 4)

    # Execute
    with pytest.raises(ConfigError) as caught:
        load(name="table", path=str(train), label="y", test_path=str(test), test_fraction=0.3)
    dataset = load(name="table", path=str(train), label="y", test_path=str(test))

    # Assert
    assert str(caught.value).startswith(
        "data.test_fraction = 0.3 is not read by data set 'table' when data.test_path gives the"
        " test split; it reads data.path, data.label, data.id_column, data.test_path,"
        " data.bad_numbers"
    )
    assert len(dataset.test) == 4  # negative control: without test_fraction it loads


def test_keys_at_their_defaults_and_keys_every_data_set_reads_pass(tmp_path: Path) -> None:
    # Prepare: negative control for the refusals above
    write_adult(tmp_path / "adult")

    # Execute
    dataset = load(name="adult", path=str(tmp_path / "adult"), max_train_samples=3)

    # Assert
    assert dataset.name == "adult"


def test_default_credit_reads_its_csv_named_as_a_file_or_by_its_folder(tmp_path: Path) -> None:
    # Prepare: the CSV under the user's own name, and in a folder under the expected name
    credit_frame().to_csv(tmp_path / "my-credit.csv", index=False)
    (tmp_path / "folder").mkdir()
    credit_frame().to_csv(tmp_path / "folder" / "default_of_credit_card_clients.csv", index=False)

    # Execute
    by_file = load(name="default-credit", path=str(tmp_path / "my-credit.csv"))
    by_folder = load(name="default-credit", path=str(tmp_path / "folder"))

    # Assert
    assert len(by_file.train) + len(by_file.test) == 40
    np.testing.assert_array_equal(by_file.train.features, by_folder.train.features)


@pytest.mark.parametrize(
    ("name", "write", "named"),
    [
        ("adult", write_adult, "adult.data"),
        ("mnist", lambda root: write_mnist(root, gz=True), "t10k-labels-idx1-ubyte.gz"),
        ("cifar10", lambda root: write_cifar(root), "cifar-10-batches-py/test_batch"),
        ("cifar10", lambda root: write_cifar(root), "cifar-10-batches-py"),
    ],
)
def test_a_registered_data_set_reads_one_of_its_files_or_subfolder_as_its_folder(
    tmp_path: Path, name: str, write: Any, named: str
) -> None:
    # Prepare
    write(tmp_path / "data")

    # Execute
    by_folder = load(name=name, path=str(tmp_path / "data"))
    by_file = load(name=name, path=str(tmp_path / "data" / named))

    # Assert
    np.testing.assert_array_equal(by_file.train.features, by_folder.train.features)


def test_a_file_that_is_not_the_data_sets_names_what_would_be_valid(tmp_path: Path) -> None:
    # Prepare
    write_adult(tmp_path)
    (tmp_path / "notes.txt").write_text("mine\n")

    # Execute
    with pytest.raises(DataError) as caught:
        load(name="adult", path=str(tmp_path / "notes.txt"))

    # Assert
    assert str(caught.value) == (
        f"{tmp_path / 'notes.txt'} is not a file of data set 'adult', which reads adult.data,"
        " adult.test from one folder; name that folder or one of those files"
    )


def test_a_path_that_does_not_exist_says_what_to_place_there(tmp_path: Path) -> None:
    # Execute / Assert
    with pytest.raises(DataError, match=r"'mnist' is not in .*nowhere; place the four MNIST"):
        load(name="mnist", path=str(tmp_path / "nowhere"))
