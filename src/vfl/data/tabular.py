"""Encode a train/test pair of tables into float32 features and int64 class indices.

Every statistic comes from the training split only, so nothing about the test split leaks into the
encoding:

- categorical columns are one-hot encoded over the categories seen in train; a missing value is a
  category of its own named ``"missing"``; a test category not seen in train encodes as all zeros;
- numeric columns are standardized with the train mean and (population) standard deviation, a
  deviation below ``MIN_STD`` (round-off level) counting as 0 and dividing by 1; a missing value
  is imputed with the train mean (0 after standardizing) and flagged in an extra
  ``"<col>=missing"`` column, added only when the column has missing values in train or test;
- labels map to class indices in the sorted order of the distinct train label values, unless the
  caller gives the order.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from vfl.data.dataset import Dataset, Split
from vfl.data.encoding import MIN_STD, MISSING, TableEncoder, fit_encoder, sorted_values
from vfl.data.numbers import is_numeric
from vfl.errors import DataError

__all__ = ["MIN_STD", "MISSING", "EncodedTable", "encode_table"]


@dataclass(frozen=True)
class EncodedTable:
    """The encoded features and labels of a train/test pair of tables.

    Attributes:
        train_features: ``(N, D)`` float32 features of the training rows.
        train_labels: ``(N,)`` int64 class indices of the training rows.
        test_features: ``(M, D)`` float32 features of the test rows.
        test_labels: ``(M,)`` int64 class indices of the test rows.
        columns: The ``D`` encoded column names (``"col=value"`` for one-hot and missing-value
            indicator columns, ``"col"`` for numeric columns).
        column_sources: The original column each encoded column came from.
        classes: The class names (the label values as strings), in class-index order.
        encoder: The fitted encoding of the feature columns (each holder keeps its share).
    """

    train_features: npt.NDArray[np.float32]
    train_labels: npt.NDArray[np.int64]
    test_features: npt.NDArray[np.float32]
    test_labels: npt.NDArray[np.int64]
    columns: tuple[str, ...]
    column_sources: tuple[str, ...]
    classes: tuple[str, ...]
    encoder: TableEncoder

    def to_dataset(
        self,
        name: str,
        *,
        train_ids: npt.NDArray[np.generic],
        test_ids: npt.NDArray[np.generic],
        classes: Sequence[str] | None = None,
    ) -> Dataset:
        """Wrap the encoding as a ``Dataset``.

        Args:
            name: The data set's name.
            train_ids: ``(N,)`` sample ids of the training rows.
            test_ids: ``(M,)`` sample ids of the test rows.
            classes: Display names for the classes, in class-index order; defaults to ``classes``.

        Returns:
            The data set.
        """
        return Dataset(
            name=name,
            train=Split(ids=train_ids, features=self.train_features, labels=self.train_labels),
            test=Split(ids=test_ids, features=self.test_features, labels=self.test_labels),
            classes=tuple(classes) if classes is not None else self.classes,
            columns=self.columns,
            column_sources=self.column_sources,
            encoder=self.encoder,
        )


def encode_table(
    train: pd.DataFrame,
    test: pd.DataFrame,
    *,
    label: str,
    categorical: Sequence[str] | None = None,
    classes: Sequence[Hashable] | None = None,
    positive_label: Hashable | None = None,
) -> EncodedTable:
    """Encode features and labels of a train and a test table with train statistics only.

    Args:
        train: The training rows: feature columns plus the label column.
        test: The test rows, with the same columns as ``train``.
        label: The label column.
        categorical: The categorical feature columns; every other feature column is numeric. If
            ``None``, columns of object, string, category or bool dtype are categorical, so a
            column of numbers with one stray word in it would be: read files with
            ``vfl.data.table.read_table``, or check frames with
            ``vfl.data.numbers.clean_numbers``, first.
        classes: The label values in class-index order; by default the sorted distinct train values.
        positive_label: For binary tasks, the label value that becomes the last class (class 1); the
            others keep sorted order. Cannot be combined with ``classes``.

    Returns:
        The encoded table.

    Raises:
        DataError: If a column is missing or not numeric where it must be, a label is missing, or a
            test label does not occur among the train labels.
    """
    features = _feature_columns(train, test, label)
    categorical_set = _categorical_columns(train, features, categorical, label)
    encoder = fit_encoder(train, test, features, categorical_set)
    order = _label_order(train[label], label, classes, positive_label)
    return EncodedTable(
        train_features=encoder.transform(train, where="the train table"),
        train_labels=_label_indices(train[label], order, label, "train"),
        test_features=encoder.transform(test, where="the test table"),
        test_labels=_label_indices(test[label], order, label, "test"),
        columns=encoder.names,
        column_sources=encoder.sources,
        classes=tuple(str(value) for value in order),
        encoder=encoder,
    )


def _feature_columns(train: pd.DataFrame, test: pd.DataFrame, label: str) -> list[Hashable]:
    for split_name, frame in (("train", train), ("test", test)):
        if frame.columns.has_duplicates:
            duplicated = sorted({str(c) for c in frame.columns[frame.columns.duplicated()]})
            raise DataError(f"{split_name} table has duplicate columns: {duplicated}")
        if label not in frame.columns:
            available = [str(c) for c in frame.columns]
            raise DataError(
                f"{split_name} table has no label column {label!r}; columns: {available}"
            )
    only_train = [str(c) for c in train.columns if c not in test.columns]
    only_test = [str(c) for c in test.columns if c not in train.columns]
    if only_train or only_test:
        raise DataError(
            "train and test tables must have the same columns; only in train:"
            f" {only_train}, only in test: {only_test}"
        )
    return [column for column in train.columns if column != label]


def _categorical_columns(
    train: pd.DataFrame,
    features: list[Hashable],
    categorical: Sequence[str] | None,
    label: str,
) -> set[Hashable]:
    if categorical is None:
        return {column for column in features if not is_numeric(train[column])}
    if label in categorical:
        raise DataError(f"the label column {label!r} cannot also be a categorical feature column")
    unknown = [name for name in categorical if name not in features]
    if unknown:
        raise DataError(
            f"categorical columns {unknown} are not in the table; feature columns:"
            f" {[str(c) for c in features]}"
        )
    return set(categorical)


def _label_order(
    train: pd.Series,
    label: str,
    classes: Sequence[Hashable] | None,
    positive_label: Hashable | None,
) -> list[Hashable]:
    _check_no_missing_labels(train, label, "train")
    seen = set(train.tolist())
    if classes is not None and positive_label is not None:
        raise DataError("give either classes or positive_label, not both")
    if classes is not None:
        unknown = sorted_values(seen - set(classes))
        if unknown:
            raise DataError(
                f"train labels {unknown} of column {label!r} are not among the classes"
                f" {list(classes)}"
            )
        return list(classes)
    if positive_label is None:
        return sorted_values(seen)
    if positive_label not in seen:
        raise DataError(
            f"positive_label {positive_label!r} does not occur in train column {label!r};"
            f" its values are {sorted_values(seen)}"
        )
    return [*sorted_values(seen - {positive_label}), positive_label]


def _label_indices(
    series: pd.Series, order: list[Hashable], label: str, split_name: str
) -> npt.NDArray[np.int64]:
    _check_no_missing_labels(series, label, split_name)
    index = {value: position for position, value in enumerate(order)}
    values = series.tolist()
    codes = np.array([index.get(value, -1) for value in values], dtype=np.int64)
    unknown = np.flatnonzero(codes < 0)
    if unknown.size:
        first = unknown[0]
        raise DataError(
            f"{split_name} row {series.index[first]} has label {values[first]!r} in column"
            f" {label!r}, which is not a train label; valid labels: {order}"
        )
    return codes


def _check_no_missing_labels(series: pd.Series, label: str, split_name: str) -> None:
    missing = np.flatnonzero(series.isna().to_numpy())
    if missing.size:
        raise DataError(
            f"{split_name} row {series.index[missing[0]]} has no value in label column {label!r}"
            f" ({missing.size} rows lack a label); drop or fill these rows"
        )
