"""A party's state directory, and each holder's own tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from vfl.config import DataConfig
from vfl.deploy.alignment import Alignment
from vfl.deploy.config import PartyDataConfig
from vfl.deploy.data import encode_features, load_labels, load_party_tables
from vfl.deploy.state import KEEP_CHECKPOINTS, PartyState
from vfl.errors import ConfigError, DataError
from vfl.wire import SPLIT_TEST, SPLIT_TRAIN


def test_checkpoints_are_named_by_round_and_only_the_newest_are_kept(tmp_path: Path) -> None:
    # Prepare
    state = PartyState(tmp_path, resume=False)

    # Execute
    for round_ in (0, 10, 20, 30, 40):
        state.save_checkpoint(round_, {"last_round": round_, "w": torch.full((2,), round_)})

    # Assert
    assert state.checkpoint_rounds() == [20, 30, 40][-KEEP_CHECKPOINTS:]
    assert state.load_checkpoint(30)["last_round"] == 30
    with pytest.raises(
        ConfigError, match=r"no checkpoint for round 10 .*\(have rounds \[20, 30, 40\]\)"
    ):
        state.load_checkpoint(10)


def test_a_state_directory_with_a_run_needs_resume(tmp_path: Path) -> None:
    # Prepare: an alignment and a checkpoint, as a run leaves them
    state = PartyState(tmp_path, resume=False)
    state.save_alignment(Alignment("abc123", {SPLIT_TRAIN: np.arange(3), SPLIT_TEST: np.arange(2)}))
    state.save_checkpoint(5, {"last_round": 5})

    # Execute / Assert
    with pytest.raises(ConfigError, match="holds a previous run"):
        PartyState(tmp_path, resume=False)
    resumed = PartyState(tmp_path, resume=True)
    assert resumed.load_alignment("abc123").rows[SPLIT_TEST].tolist() == [0, 1]
    with pytest.raises(ConfigError, match="no alignment 'other'"):
        resumed.load_alignment("other")


def test_an_alignment_without_a_checkpoint_is_no_run_to_keep(tmp_path: Path) -> None:
    # Prepare: a run stopped after PSI, before its first checkpoint
    PartyState(tmp_path, resume=False).save_alignment(
        Alignment("abc123", {SPLIT_TRAIN: np.arange(3), SPLIT_TEST: np.arange(2)})
    )

    # Execute: a new run in the same state directory
    fresh = PartyState(tmp_path, resume=False)

    # Assert: accepted (the server's run folder is checked the same way); the alignment is kept
    assert fresh.load_alignment("abc123").rows[SPLIT_TRAIN].tolist() == [0, 1, 2]


def write_tables(tmp_path: Path) -> PartyDataConfig:
    train = pd.DataFrame({"id": [3, 1, 2], "x": [1.0, 2.0, 3.0], "c": ["a", "b", "a"]})
    test = pd.DataFrame({"id": [9, 8], "x": [2.0, 5.0], "c": ["b", "z"]})
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_parquet(tmp_path / "test.parquet")
    return PartyDataConfig(
        train=str(tmp_path / "train.csv"), test=str(tmp_path / "test.parquet"), id_column="id"
    )


def test_party_features_are_encoded_with_aligned_training_statistics(tmp_path: Path) -> None:
    # Prepare
    tables = load_party_tables(write_tables(tmp_path))
    rows = np.array([2, 0], dtype=np.int64)  # ids 2 and 3, in that order

    # Execute
    train, test = encode_features(tables[SPLIT_TRAIN].take(rows), tables[SPLIT_TEST])

    # Assert: x standardized with mean 2 and std 1 of the aligned rows; c one-hot over {a}
    assert tables[SPLIT_TRAIN].ids[rows].tolist() == [2, 3]
    torch.testing.assert_close(train, torch.tensor([[1.0, 1.0], [-1.0, 1.0]]))
    torch.testing.assert_close(test, torch.tensor([[0.0, 0.0], [3.0, 0.0]]))


def test_a_missing_column_is_named(tmp_path: Path) -> None:
    config = write_tables(tmp_path)
    wrong = PartyDataConfig(train=config.train, test=config.test, id_column="id", columns=("y",))
    with pytest.raises(DataError, match="no column\\(s\\) \\['y'\\]"):
        load_party_tables(wrong)


def test_labels_come_with_sorted_classes_and_align_by_rows(tmp_path: Path) -> None:
    # Prepare
    pd.DataFrame({"id": ["a", "b", "c"], "y": ["no", "yes", "no"]}).to_csv(tmp_path / "l.csv")
    pd.DataFrame({"id": ["d"], "y": ["yes"]}).to_csv(tmp_path / "t.csv")
    config = DataConfig(
        name="table",
        path=str(tmp_path / "l.csv"),
        test_path=str(tmp_path / "t.csv"),
        label="y",
        id_column="id",
    )

    # Execute
    labels = load_labels(config)
    aligned = labels.aligned({SPLIT_TRAIN: np.array([1, 2]), SPLIT_TEST: np.array([0])})

    # Assert
    assert labels.classes == ("no", "yes")
    assert aligned[SPLIT_TRAIN].tolist() == [1, 0]
    assert aligned[SPLIT_TEST].tolist() == [1]
