"""A fitted table encoding: what turns one holder's raw columns into float32 features, as JSON.

Each column is encoded on its own, with statistics of the training rows only (``vfl.data.tabular``
states the rules): a numeric column is standardized with its train mean and deviation, its missing
values imputed with the mean and, where the column had missing values, flagged in an extra
``"<col>=missing"`` column; a categorical column is one-hot encoded over its train categories, a
missing value being a category of its own and an unseen category encoding as all zeros.

Because every column stands alone, the encoding of a holder's own columns is exactly the global
encoding restricted to them: each party fits and keeps its own ``TableEncoder``, exports it with
its model bundle (``to_json``), and transforms new rows with it at prediction time.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from vfl.data.numbers import is_numeric
from vfl.errors import DataError

MISSING = "missing"
MIN_STD = 10 * float(np.finfo(np.float64).eps)  # smaller deviations are round-off: treat as 0
FORMAT = "vfl-table-encoder/1"

Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True)
class NumericColumn:
    """A standardized numeric column.

    Attributes:
        name: The raw column.
        mean: The train mean (imputed for missing values).
        scale: The train (population) deviation, 1 where it is round-off small.
        missing_flag: Whether a ``"<name>=missing"`` indicator column follows.
    """

    name: str
    mean: float
    scale: float
    missing_flag: bool

    @property
    def names(self) -> list[str]:
        """The encoded column names."""
        return [self.name, f"{self.name}={MISSING}"] if self.missing_flag else [self.name]

    def transform(self, series: pd.Series, where: str) -> Matrix:
        """``(n, 1)`` standardized values, plus the indicator column if it has one."""
        values = numeric_values(self.name, series, where)
        missing = np.isnan(values)
        z = (np.where(missing, self.mean, values) - self.mean) / self.scale
        if not self.missing_flag:
            return z[:, None]
        return np.column_stack([z, missing]).astype(np.float64)


@dataclass(frozen=True)
class CategoricalColumn:
    """A one-hot encoded categorical column.

    Attributes:
        name: The raw column.
        categories: The train categories in encoded-column order (``"missing"`` last if any).
    """

    name: str
    categories: tuple[Hashable, ...]

    @property
    def names(self) -> list[str]:
        """The encoded column names."""
        return [f"{self.name}={value}" for value in self.categories]

    def transform(self, series: pd.Series, where: str) -> Matrix:
        """``(n, k)`` indicators; a category not seen in train encodes as all zeros."""
        index = {value: position for position, value in enumerate(self.categories)}
        codes = np.array([index.get(key, -1) for key in category_keys(series)], dtype=np.int64)
        out = np.zeros((len(codes), len(index)), dtype=np.float64)
        rows = np.flatnonzero(codes >= 0)
        out[rows, codes[rows]] = 1.0
        return out


Column = NumericColumn | CategoricalColumn


@dataclass(frozen=True)
class TableEncoder:
    """The fitted encoding of one holder's feature columns, in column order."""

    columns: tuple[Column, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The encoded column names, in feature order."""
        return tuple(name for column in self.columns for name in column.names)

    @property
    def sources(self) -> tuple[str, ...]:
        """The raw column each encoded column comes from."""
        return tuple(column.name for column in self.columns for _ in column.names)

    @property
    def raw_columns(self) -> tuple[str, ...]:
        """The raw columns a table must hold to be transformed."""
        return tuple(column.name for column in self.columns)

    def transform(self, frame: pd.DataFrame, *, where: str = "table") -> npt.NDArray[np.float32]:
        """``(n, D)`` float32 features of ``frame``'s rows.

        Raises:
            DataError: naming ``where`` and the column that is missing or not numeric.
        """
        absent = [name for name in self.raw_columns if name not in frame.columns]
        if absent:
            raise DataError(
                f"{where} has no column(s) {absent}, which the encoding was fitted on; its"
                f" columns: {[str(c) for c in frame.columns]}"
            )
        blocks = [column.transform(frame[column.name], where) for column in self.columns]
        if not blocks:
            return np.zeros((len(frame), 0), dtype=np.float32)
        return np.concatenate(blocks, axis=1).astype(np.float32)  # (n, D)

    def unseen(self, frame: pd.DataFrame) -> dict[str, npt.NDArray[np.bool_]]:
        """The rows whose category training never saw, per categorical column holding any.

        ``transform`` encodes such a category as all zeros.
        """
        found = {}
        for column in self.columns:
            if isinstance(column, CategoricalColumn) and column.name in frame.columns:
                known = set(column.categories)
                keys = category_keys(frame[column.name])
                rows = np.array([key not in known for key in keys], dtype=np.bool_)
                if rows.any():
                    found[column.name] = rows
        return found

    def select(self, sources: Sequence[str]) -> TableEncoder:
        """The encoding of the raw columns ``sources`` only (one holder's share), in this order."""
        chosen = set(sources)
        return TableEncoder(tuple(c for c in self.columns if c.name in chosen))

    def as_dict(self) -> dict[str, Any]:
        """The fitted encoding as plain JSON values."""
        return {"format": FORMAT, "columns": [_column_json(c) for c in self.columns]}

    @classmethod
    def from_dict(cls, raw: Any) -> TableEncoder:
        """Inverse of ``as_dict``.

        Raises:
            DataError: if ``raw`` is not a fitted table encoding.
        """
        try:
            if raw.get("format") != FORMAT:
                raise ValueError(f"format {raw.get('format')!r}, expected {FORMAT!r}")
            return cls(tuple(_column_from_json(entry) for entry in raw["columns"]))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise DataError(f"not a fitted table encoding: {error}") from None

    def to_json(self) -> str:
        """The fitted encoding as JSON text (no pickle)."""
        return json.dumps(self.as_dict())

    @classmethod
    def from_json(cls, text: str) -> TableEncoder:
        """Inverse of ``to_json``.

        Raises:
            DataError: if the text is not a fitted table encoding.
        """
        try:
            raw = json.loads(text)
        except ValueError as error:
            raise DataError(f"not a fitted table encoding: {error}") from None
        return cls.from_dict(raw)


def fit_encoder(
    train: pd.DataFrame,
    test: pd.DataFrame | None,
    columns: Sequence[Hashable],
    categorical: Collection[Hashable],
) -> TableEncoder:
    """Fit the encoding of ``columns`` on the training rows.

    ``test`` only decides whether a numeric column gets a missing-value indicator (it does when
    either split has missing values), so that train and test encode alike; nothing else about
    the test rows enters the encoding.
    """
    fitted: list[Column] = []
    for column in columns:
        if column in categorical:
            fitted.append(_fit_categorical(column, train[column]))
        else:
            other = None if test is None else test[column]
            fitted.append(_fit_numeric(column, train[column], other))
    return TableEncoder(tuple(fitted))


def _fit_categorical(column: Hashable, train: pd.Series) -> CategoricalColumn:
    present = set(category_keys(train))
    categories = sorted_values(present - {MISSING})
    if MISSING in present:
        categories.append(MISSING)
    return CategoricalColumn(str(column), tuple(categories))


def _fit_numeric(column: Hashable, train: pd.Series, test: pd.Series | None) -> NumericColumn:
    values = numeric_values(column, train, "the train table")
    observed = values[~np.isnan(values)]
    mean = float(observed.mean()) if observed.size else 0.0
    std = float(observed.std()) if observed.size else 0.0
    missing = bool(np.isnan(values).any())
    if test is not None:
        missing = missing or bool(np.isnan(numeric_values(column, test, "the test table")).any())
    return NumericColumn(str(column), mean, std if std > MIN_STD else 1.0, missing)


def category_keys(series: pd.Series) -> list[Hashable]:
    """The values of ``series`` with missing entries replaced by ``MISSING``."""
    missing = series.isna().to_numpy()
    values = series.tolist()
    return [MISSING if gone else value for value, gone in zip(values, missing, strict=True)]


def numeric_values(column: Hashable, series: pd.Series, where: str) -> Matrix:
    """The values of a numeric column as float64, NaN where missing.

    Raises:
        DataError: naming the column, the row and the value that is not a finite number.
    """
    if not is_numeric(series):
        try:
            series = pd.to_numeric(series)
        except (ValueError, TypeError) as error:
            parsed = pd.to_numeric(series.astype("string").str.strip(), errors="coerce")
            first = int(np.flatnonzero((series.notna() & parsed.isna()).to_numpy(dtype=bool))[0])
            raise DataError(
                f"numeric column {column!r} of {where} holds {series.iloc[first]!r} at row"
                f" {series.index[first]}, which is not a number; list the column as categorical,"
                " or fix the value"
            ) from error
    values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    infinite = np.flatnonzero(np.isinf(values))
    if infinite.size:
        raise DataError(
            f"numeric column {column!r} of {where} is infinite at row"
            f" {series.index[infinite[0]]}; values must be finite or missing"
        )
    return values


def sorted_values(values: Any) -> list[Hashable]:
    """Sort values naturally, or by their text when they are of mixed, unorderable types."""
    values = list(values)
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=str)


def _column_json(column: Column) -> dict[str, Any]:
    if isinstance(column, NumericColumn):
        return {
            "kind": "numeric",
            "name": column.name,
            "mean": column.mean,
            "scale": column.scale,
            "missing_flag": column.missing_flag,
        }
    categories = [_plain(value) for value in column.categories]
    return {"kind": "categorical", "name": column.name, "categories": categories}


def _column_from_json(entry: dict[str, Any]) -> Column:
    if entry["kind"] == "numeric":
        name, mean, scale = str(entry["name"]), float(entry["mean"]), float(entry["scale"])
        return NumericColumn(name, mean, scale, bool(entry["missing_flag"]))
    if entry["kind"] == "categorical":
        return CategoricalColumn(str(entry["name"]), tuple(entry["categories"]))
    raise ValueError(f"unknown column kind {entry['kind']!r}")


def _plain(value: Hashable) -> Any:
    """A category as a JSON value (numpy scalars become Python ones)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
