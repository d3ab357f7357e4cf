"""Every registered data set loads through a run's ``[data]`` table, from files in its layout.

Each data set gets a small fake of its files (``tests/data/fakes.py``); a data set registered
without one here fails the first test, so that no entry goes unexercised.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from vfl.config import load_config
from vfl.data.credit import CREDIT_FILE
from vfl.data.registry import DATASETS, settings_read
from vfl.errors import DataError
from vfl.run.data import load_data

from .fakes import credit_frame, write_adult, write_cifar, write_mnist

FAKES: dict[str, Callable[[Path], object]] = {
    "mnist": lambda folder: write_mnist(folder),
    "fashion-mnist": lambda folder: write_mnist(folder, gz=True),
    "adult": write_adult,
    "cifar10": lambda folder: write_cifar(folder),
    "default-credit": lambda folder: credit_frame().to_csv(folder / CREDIT_FILE, index=False),
}
"""How to write a small copy of each data set's files."""


def test_every_registered_data_set_has_a_fake() -> None:
    # Execute / Assert
    assert set(DATASETS.names()) == set(FAKES)


@pytest.mark.parametrize("name", DATASETS.names())
def test_every_registered_data_set_loads_from_its_config(name: str, tmp_path: Path) -> None:
    # Prepare
    folder = tmp_path / name
    folder.mkdir()
    FAKES[name](folder)
    config = load_config(None, [f"data.name={name}", f"data.path={folder}"])

    # Execute
    dataset = load_data(config)

    # Assert
    assert dataset.name == name
    assert len(dataset.train) > 0 and len(dataset.test) > 0
    assert settings_read(name)[0] == "path"


def test_an_unregistered_name_lists_the_registered_ones(tmp_path: Path) -> None:
    # Prepare
    config = load_config(None, ["data.name=imagenet"])

    # Execute
    with pytest.raises(DataError) as error:
        load_data(config)

    # Assert
    for name in DATASETS.names():
        assert name in str(error.value)
