"""Each holder's own data in a deployment: the parties' feature tables, the server's labels.

IDs are matched by their text: an integer ID ``7`` and a string ID ``"7"`` are the same sample,
``"007"`` is another one. Features are encoded (``vfl.data.tabular.encode_table``) only after
alignment, with statistics of the party's aligned training rows, so that a deployment whose
files are columns of one table encodes exactly as the simulator does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
import torch

from vfl.config import DataConfig
from vfl.data.encoding import TableEncoder
from vfl.data.table import read_table, sample_ids
from vfl.data.tabular import encode_table
from vfl.deploy.party_config import PartyDataConfig
from vfl.errors import DataError
from vfl.wire import SPLIT_TEST, SPLIT_TRAIN

SPLITS = {SPLIT_TRAIN: "train", SPLIT_TEST: "test"}
_NO_LABEL = "__vfl_no_label__"


@dataclass(frozen=True)
class HolderSplit:
    """One split of a holder's table.

    Attributes:
        ids: Sample IDs, ``(N,)``, distinct.
        frame: The holder's other columns for those rows (features or the label).
    """

    ids: npt.NDArray[np.generic]
    frame: pd.DataFrame

    def take(self, rows: npt.NDArray[np.int64]) -> HolderSplit:
        """The rows at ``rows``, in that order."""
        return HolderSplit(self.ids[rows], self.frame.iloc[rows].reset_index(drop=True))


def id_bytes(ids: npt.NDArray[np.generic]) -> list[bytes]:
    """The bytes PSI hashes for each ID: its text, UTF-8 encoded.

    Example:
        >>> id_bytes(np.array([7, 42]))
        [b'7', b'42']
    """
    return [str(value).encode() for value in ids.tolist()]


def load_party_tables(config: PartyDataConfig) -> dict[int, HolderSplit]:
    """A party's train and test tables: IDs and the configured feature columns.

    Raises:
        DataError: on a missing file or column, or a missing or repeated ID.
    """
    tables = {}
    for split, path in ((SPLIT_TRAIN, config.train), (SPLIT_TEST, config.test)):
        skip = (config.id_column, *config.categorical)
        frame = read_table(Path(path), bad_numbers=config.bad_numbers, skip=skip)
        wanted = list(config.columns) or [c for c in frame.columns if c != config.id_column]
        _require(frame, Path(path), [config.id_column, *wanted])
        ids = sample_ids(frame, config.id_column, Path(path))
        tables[split] = HolderSplit(ids, frame[wanted].reset_index(drop=True))
    return tables


def encode_features(
    train: HolderSplit, test: HolderSplit, *, categorical: Sequence[str] = ()
) -> tuple[torch.Tensor, torch.Tensor]:
    """``float32`` feature blocks ``(N, D)`` and ``(N_test, D)``, encoded with train statistics."""
    train_block, test_block, _ = fit_features(train, test, categorical=categorical)
    return train_block, test_block


def fit_features(
    train: HolderSplit, test: HolderSplit, *, categorical: Sequence[str] = ()
) -> tuple[torch.Tensor, torch.Tensor, TableEncoder]:
    """Like ``encode_features``, with the fitted encoding (for the party's model bundle)."""
    encoded = encode_table(
        train.frame.assign(**{_NO_LABEL: 0}),
        test.frame.assign(**{_NO_LABEL: 0}),
        label=_NO_LABEL,
        categorical=list(categorical) or None,
    )
    return (
        torch.from_numpy(encoded.train_features),
        torch.from_numpy(encoded.test_features),
        encoded.encoder,
    )


@dataclass(frozen=True)
class LabelTables:
    """The server's labels: IDs and class indices per split, and the class names."""

    splits: dict[int, HolderSplit]
    labels: dict[int, npt.NDArray[np.int64]]
    classes: tuple[str, ...]

    def aligned(self, rows: Mapping[int, npt.NDArray[np.int64]]) -> dict[int, torch.Tensor]:
        """``int64`` labels of the aligned rows, per split."""
        return {split: torch.from_numpy(self.labels[split][rows[split]]) for split in SPLITS}


def load_labels(config: DataConfig) -> LabelTables:
    """The labels table the server's ``[data]`` names (``id_column`` and ``label`` only).

    Classes are the sorted distinct training labels, as ``vfl.data.table.load_table`` makes them.

    Raises:
        DataError: on a missing file or column, missing labels, or a test label unseen in train.
    """
    splits = {}
    for split, path in ((SPLIT_TRAIN, config.path), (SPLIT_TEST, config.test_path)):
        frame = read_table(Path(path), bad_numbers=config.bad_numbers, skip=(config.id_column,))
        _require(frame, Path(path), [config.id_column, config.label])
        ids = sample_ids(frame, config.id_column, Path(path))
        splits[split] = HolderSplit(ids, frame[[config.label]].reset_index(drop=True))
    encoded = encode_table(splits[SPLIT_TRAIN].frame, splits[SPLIT_TEST].frame, label=config.label)
    if len(encoded.classes) < 2:
        raise DataError(f"{config.path}: a task needs 2 or more classes, got {encoded.classes}")
    labels = {SPLIT_TRAIN: encoded.train_labels, SPLIT_TEST: encoded.test_labels}
    return LabelTables(splits, labels, encoded.classes)


def _require(frame: pd.DataFrame, path: Path, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(
            f"{path} has no column(s) {missing}; its columns: {[str(c) for c in frame.columns]}"
        )
