"""In-memory data sets: sample IDs, features and labels, split as their source defines."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from vfl.data.encoding import TableEncoder
from vfl.errors import DataError


@dataclass(frozen=True)
class Split:
    """One split (train or test) of a data set.

    Attributes:
        ids: Sample IDs, shape ``(N,)``; integers or strings, unique within the split.
        features: ``float32`` features, ``(N, D)`` for tables or ``(N, C, H, W)`` for images.
        labels: ``int64`` class indices, shape ``(N,)``.
    """

    ids: npt.NDArray[np.generic]
    features: npt.NDArray[np.float32]
    labels: npt.NDArray[np.int64]

    def __post_init__(self) -> None:
        n = len(self.labels)
        if len(self.ids) != n or len(self.features) != n:
            raise DataError(
                f"split has {len(self.ids)} ids, {len(self.features)} feature rows and {n} labels;"
                " all three must be equal"
            )
        if self.features.dtype != np.float32:
            raise DataError(f"features must be float32, got {self.features.dtype}")
        check_finite(self.features, what="features")

    def __len__(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class Dataset:
    """A data set with its source-defined train/test split.

    Attributes:
        name: Registry name, for example ``"mnist"``.
        train: The training split.
        test: The test split.
        classes: Human-readable class names; ``len(classes)`` is the number of classes.
        columns: For tables, the name of every feature column after encoding (one-hot columns
            are named ``"source=value"``); ``None`` for images.
        column_sources: For tables, the original column each encoded column came from, so that
            partitions can name original columns; ``None`` for images.
        encoder: For tables, the fitted encoding of the raw columns (each holder keeps its share
            to transform new rows alike); ``None`` for images and pre-encoded arrays.
    """

    name: str
    train: Split
    test: Split
    classes: tuple[str, ...]
    columns: tuple[str, ...] | None = None
    column_sources: tuple[str, ...] | None = field(default=None)
    encoder: TableEncoder | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.train.features.shape[1:] != self.test.features.shape[1:]:
            raise DataError(
                f"train features have shape {self.train.features.shape[1:]} per sample but test"
                f" features have {self.test.features.shape[1:]}"
            )
        if len(self.classes) < 2:
            raise DataError(f"a data set needs at least 2 classes, got {list(self.classes)}")
        for split_name, split in (("train", self.train), ("test", self.test)):
            if len(split) and (split.labels.min() < 0 or split.labels.max() >= len(self.classes)):
                raise DataError(
                    f"{split_name} labels must lie in [0, {len(self.classes) - 1}], got"
                    f" [{split.labels.min()}, {split.labels.max()}]"
                )
        if self.columns is not None:
            width = self.train.features.shape[1]
            if len(self.columns) != width:
                raise DataError(f"{len(self.columns)} column names for {width} feature columns")
            sources = self.column_sources or self.columns
            if len(sources) != width:
                raise DataError(f"{len(sources)} column sources for {width} feature columns")

    @property
    def num_classes(self) -> int:
        """Number of classes."""
        return len(self.classes)

    @property
    def is_image(self) -> bool:
        """Whether samples are ``(C, H, W)`` images."""
        return self.train.features.ndim == 4

    @property
    def sample_shape(self) -> tuple[int, ...]:
        """Shape of one sample's features."""
        return tuple(self.train.features.shape[1:])


def check_finite(features: npt.NDArray[np.floating], *, what: str) -> None:
    """Raise ``DataError`` naming the first non-finite entry (NaN or infinity), if any."""
    finite = np.isfinite(features)
    if finite.all():
        return
    bad = np.argwhere(~finite)[0]
    row, position = int(bad[0]), tuple(int(i) for i in bad[1:])
    count = int((~finite).sum())
    raise DataError(
        f"{what} contain {count} non-finite value(s) (NaN or infinity); the first is at row {row},"
        f" position {position}: {features[tuple(bad)]!r}. Impute or drop these rows before"
        " training."
    )
