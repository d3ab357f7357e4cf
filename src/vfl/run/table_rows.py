"""Rows of a table as a model takes them, and what it predicts for them.

``TableRows`` turns a table of raw columns into every party's block, the rows' IDs and labels
(``Rows``), by each party's own encoding; ``Predictions`` holds the probabilities of each class
per row. Shared by the neural model (``vfl.run.predict.Model``) and the tree runs'
(``vfl.run.tree_predict.TreeModel``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import torch

from vfl.config import RunConfig
from vfl.data import raw_label
from vfl.errors import DataError

UNSEEN_COLUMN = "unseen_categories"
"""The predictions' column naming, per row, the raw columns with a category unseen in training."""


@dataclass(frozen=True)
class Predictions:
    """What the label holder learns for a batch of rows.

    Attributes:
        ids: The rows' sample ids.
        classes: The class names, in class-index order.
        probabilities: ``(n, C)`` probability of each class.
        metrics: Loss and accuracy (F1, AUC for binary tasks) when labels were given.
        unseen: Per raw column that holds any, the rows whose category training never saw
            (scored by the training rule: all zeros one-hot).
    """

    ids: npt.NDArray[Any]
    classes: tuple[str, ...]
    probabilities: npt.NDArray[np.float64]
    metrics: dict[str, float] | None = None
    unseen: dict[str, npt.NDArray[np.bool_]] = field(default_factory=dict)

    @property
    def predicted(self) -> npt.NDArray[np.int64]:
        """The most probable class index of each row."""
        return np.asarray(self.probabilities.argmax(axis=1), dtype=np.int64)

    @property
    def labels(self) -> npt.NDArray[np.str_]:
        """The most probable class name of each row."""
        return np.asarray(self.classes)[self.predicted]

    def to_frame(self) -> pd.DataFrame:
        """``id``, ``predicted`` (class name) and ``probability_<class>`` columns, one row each.

        When some rows hold categories unseen in training, an ``unseen_categories`` column
        names their columns (``;``-separated; empty for the other rows).
        """
        frame = pd.DataFrame({"id": self.ids, "predicted": self.labels})
        for index, name in enumerate(self.classes):
            frame[f"probability_{name}"] = self.probabilities[:, index]
        if self.unseen:
            columns = [[c for c, rows in self.unseen.items() if rows[i]] for i in range(len(frame))]
            frame[UNSEEN_COLUMN] = [";".join(names) for names in columns]
        return frame


@dataclass(frozen=True)
class Rows:
    """Every party's block of some rows, their IDs and, if known, their labels."""

    blocks: list[torch.Tensor]
    ids: npt.NDArray[Any]
    labels: torch.Tensor | None
    unseen: dict[str, npt.NDArray[np.bool_]] = field(default_factory=dict)
    """Per raw column that holds any, the rows whose category training never saw."""


class TableRows(ABC):
    """What a loaded model does with a table of raw rows: each party's block, IDs and labels.

    Shared by ``Model`` and the tree runs' ``vfl.run.tree_predict.TreeModel``: a subclass has
    ``config``, ``classes`` and ``parties`` (bundles by party id, each with an ``encoder``).
    """

    parties: Mapping[int, Any]

    @property
    @abstractmethod
    def config(self) -> RunConfig:
        """The run config."""

    @property
    @abstractmethod
    def classes(self) -> tuple[str, ...]:
        """The class names, in class-index order."""

    def features(self, frame: pd.DataFrame, *, where: str = "the table") -> list[torch.Tensor]:
        """Every party's feature block of ``frame``'s rows, each made by the party's own encoding.

        Raises:
            DataError: naming the column a party needs that ``frame`` lacks or holds badly.
        """
        blocks = []
        for party, bundle in self.parties.items():
            encoder = bundle.encoder
            if encoder is None:
                raise DataError(
                    f"party {party}'s rows are tensors (images, or your own modules exported by"
                    " vfl.export), not table columns: give every party's block as a tensor"
                )
            blocks.append(torch.from_numpy(encoder.transform(frame, where=where)))
        return blocks

    def rows(self, frame: pd.DataFrame, *, id_column: str = "", where: str = "the table") -> Rows:
        """Every party's block of ``frame``'s raw rows, their IDs and labels (if it has them).

        What ``vfl predict --data FILE`` reads from a file.

        IDs come from ``id_column`` (by default the run's ``data.id_column`` when the frame has
        it, else row numbers); labels from the run's label column (``data.label``, or a
        registered data set's, such as Adult's ``income``), when the frame has it.

        Raises:
            DataError: naming the column or label that does not fit the model.
        """
        if not isinstance(frame, pd.DataFrame):
            raise DataError(f"expected a pandas DataFrame of raw columns, got {type(frame)}")
        config = self.config
        column = id_column or (config.data.id_column if config.data.id_column in frame else "")
        if column and column not in frame:
            raise DataError(
                f"{where} has no ID column {column!r}; its columns: {list(frame.columns)}"
            )
        ids = frame[column].to_numpy() if column else np.arange(len(frame))
        label = config.data.label or raw_label(config.data.name)
        labels = None
        if label and label in frame:
            labels = label_indices(
                frame[label].tolist(), self.classes, f"{where}: label column {label!r}"
            )
        return Rows(self.features(frame, where=where), ids, labels, self.unseen(frame))

    def unseen(self, frame: pd.DataFrame) -> dict[str, npt.NDArray[np.bool_]]:
        """Per raw column of ``frame``, the rows holding a category its party never trained on."""
        found: dict[str, npt.NDArray[np.bool_]] = {}
        for bundle in self.parties.values():
            if bundle.encoder is not None:
                found.update(bundle.encoder.unseen(frame))
        return found


def label_indices(values: Sequence[Any], classes: Sequence[str], where: str) -> torch.Tensor:
    """Class indices of label ``values`` (matched by their text to the model's ``classes``).

    Raises:
        DataError: naming ``where`` and the values that are not classes of the model.
    """
    names = [str(value) for value in values]
    index = {name: position for position, name in enumerate(classes)}
    unknown = sorted({name for name in names if name not in index})
    if unknown:
        raise DataError(
            f"{where} holds {unknown[:3]}, which are not classes of the model; classes:"
            f" {list(classes)}"
        )
    return torch.tensor([index[name] for name in names], dtype=torch.int64)
