"""``data.subsample_seed``: which rows ``data.max_*_samples`` draw; refused where it draws none."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.test_cli import write_table
from vfl.config import RunConfig
from vfl.config.io import from_mapping
from vfl.errors import ConfigError
from vfl.run.data import load_data

ROWS = 300


def config(table: Path, **data: object) -> RunConfig:
    settings = {"name": "table", "path": str(table), "label": "default", "id_column": "id"}
    return from_mapping(RunConfig, {"data": {**settings, **data}})


def test_the_seed_draws_the_rows_numpy_draws_with_it(tmp_path: Path) -> None:
    # Prepare
    table = write_table(tmp_path / "t.csv", rows=ROWS)
    whole = load_data(config(table, test_fraction=0.2))

    # Execute
    drawn = {
        seed: load_data(config(table, test_fraction=0.2, max_train_samples=50, subsample_seed=seed))
        for seed in (0, 1, 2)
    }

    # Assert: default_rng(seed).choice of the training rows, sorted (as bench and make_data.py
    # draw theirs); seed 0 is what a config without the key draws; other seeds draw other rows
    for seed, dataset in drawn.items():
        rows = np.sort(np.random.default_rng(seed).choice(len(whole.train), 50, replace=False))
        assert list(dataset.train.ids) == list(whole.train.ids[rows])
    default = load_data(config(table, test_fraction=0.2, max_train_samples=50))
    assert list(default.train.ids) == list(drawn[0].train.ids)
    assert len({tuple(d.train.ids) for d in drawn.values()}) == 3


def test_a_seed_without_a_subsample_is_refused_naming_the_key(tmp_path: Path) -> None:
    # Prepare
    table = write_table(tmp_path / "t.csv", rows=ROWS)

    # Execute / Assert
    with pytest.raises(ConfigError, match="subsample_seed: 3 draws nothing without a subsample"):
        config(table, subsample_seed=3)
    with pytest.raises(ConfigError, match="subsample_seed"):
        config(table, max_train_samples=10, subsample_seed=-1)
