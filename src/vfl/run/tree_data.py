"""The data of a tree run: each holder's columns as float64 blocks, by party id.

Trees split each column at its own quantile cut points, so the columns are the ones the neural
runs use (a party's encoded table columns, one-hot categories included) taken as numbers. The
label holder is ``protocol.active_party``; with 0, a holder of the labels and no columns (party
0), as the server of a neural run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from vfl.config import RunConfig
from vfl.data.vertical import VerticalData
from vfl.errors import ConfigError

Blocks = dict[int, npt.NDArray[np.float64]]
LABELS_ONLY = 0
"""The party id of a label holder without columns (``protocol.active_party = 0``)."""


@dataclass(frozen=True)
class TreeData:
    """Row-aligned blocks by party, and the labels the label holder keeps."""

    label_party: int
    train: Blocks
    test: Blocks
    train_labels_tensor: torch.Tensor
    test_labels_tensor: torch.Tensor

    @property
    def train_labels(self) -> npt.NDArray[np.float64]:
        """The training labels as numbers (0 and 1)."""
        return self.train_labels_tensor.numpy().astype(np.float64)

    @property
    def test_labels(self) -> npt.NDArray[np.float64]:
        """The test labels as numbers."""
        return self.test_labels_tensor.numpy().astype(np.float64)


def blocks_by_party(
    blocks: tuple[torch.Tensor, ...] | list[torch.Tensor], label_party: int
) -> Blocks:
    """Each party's block as float64 rows (``(n, D)``), plus an empty one for party 0."""
    out = {p: _matrix(block) for p, block in enumerate(blocks, start=1)}
    if label_party == LABELS_ONLY:
        out[LABELS_ONLY] = np.zeros((len(blocks[0]), 0), dtype=np.float64)
    return out


def tree_data(config: RunConfig, data: VerticalData) -> TreeData:
    """The blocks and labels of ``data`` for the holders of ``config``.

    Raises:
        ConfigError: if the task is not binary (``binary:logistic`` needs two classes), the
            objective is not one ``vfl run`` trains, or the label holder is not a party.
    """
    objective = config.boost.objective
    if objective != "binary:logistic":
        raise ConfigError(
            f"boost.objective: vfl run trains 'binary:logistic' on its classification data sets,"
            f" not {objective!r} (regression trees run from Python: vfl.boost.train_secureboost)"
        )
    if not data.task.binary:
        raise ConfigError(
            f"boost.objective 'binary:logistic' needs a binary task; this data set has"
            f" {data.task.num_classes} classes: make it binary with data.positive_classes"
        )
    label_party = config.protocol.active_party
    if label_party > data.num_parties:
        raise ConfigError(
            f"protocol.active_party: {label_party} is not a party of this run"
            f" (1..{data.num_parties}, or 0 for a label holder without columns)"
        )
    return TreeData(
        label_party,
        blocks_by_party(data.train_blocks, label_party),
        blocks_by_party(data.test_blocks, label_party),
        data.train_labels,
        data.test_labels,
    )


def _matrix(block: torch.Tensor) -> npt.NDArray[np.float64]:
    array = block.numpy().astype(np.float64)
    return array.reshape(len(array), -1)
