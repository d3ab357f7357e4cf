"""Load any CSV or Parquet table as a ``Dataset``, and split tables that define no split."""

from __future__ import annotations

import csv
from collections.abc import Collection, Hashable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from vfl.data.csv_layout import check_layout
from vfl.data.dataset import Dataset
from vfl.data.numbers import BadNumbers, clean_numbers
from vfl.data.tabular import encode_table
from vfl.errors import DataError

TABLE_SUFFIXES = (".csv", ".csv.gz", ".parquet", ".pq")
SPLIT_VALUES = ("train", "test")


def load_table(
    path: Path | str,
    *,
    label: str,
    id_column: str | None = None,
    test_path: Path | str | None = None,
    split_column: str | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    categorical: Sequence[str] | None = None,
    name: str | None = None,
    bad_numbers: BadNumbers = "error",
) -> Dataset:
    """Load a CSV (``.csv``, ``.csv.gz``) or Parquet (``.parquet``, ``.pq``) table.

    The test split is, in order of precedence: the rows of ``test_path``; the rows whose
    ``split_column`` is ``"test"`` (the others must be ``"train"``); or a stratified random
    ``test_fraction`` of the rows drawn with ``seed`` (see ``stratified_split``). Either split
    left empty is an error. Files are read with ``read_table``'s checks; features are encoded
    with ``encode_table`` using train statistics only.

    Args:
        path: The table, or its training rows when ``test_path`` is given.
        label: The label column.
        id_column: The column of sample ids; if ``None``, ids are ``int64`` row positions in the
            file (``path`` and ``test_path`` counted separately).
        test_path: A second table holding the test rows.
        split_column: A column of ``"train"``/``"test"`` markers.
        test_fraction: The share of each class put in the test split when the table has no split.
        seed: Seed of the random split.
        categorical: The categorical feature columns; inferred from the dtypes if ``None``.
        name: The data set's name; defaults to the file name without its suffix.
        bad_numbers: What a cell that is not a number in a column of numbers is: ``"error"``
            or ``"missing"`` (see ``vfl.data.numbers``).

    Returns:
        The data set.

    Raises:
        DataError: On an unknown file type, a malformed file (see ``read_table``), a missing
            label, id or split column, duplicate or missing ids, invalid split markers, or an
            empty split.
    """
    path = Path(path)
    skip = [c for c in (id_column, split_column, *(categorical or ())) if c is not None]
    frame = read_table(path, bad_numbers=bad_numbers, skip=skip)
    _require_columns(frame, path, label, id_column, split_column)
    require_rows(path, frame, "the table")
    ids = sample_ids(frame, id_column, path)
    if test_path is not None:
        test_path = Path(test_path)
        test = read_table(test_path, bad_numbers=bad_numbers, skip=skip)
        _require_columns(test, test_path, label, id_column, None)
        require_rows(test_path, test, "the test table")
        train, train_ids, test_ids = frame, ids, sample_ids(test, id_column, test_path)
    else:
        train, test, train_ids, test_ids = _split(
            frame,
            ids,
            path,
            label=label,
            split_column=split_column,
            fraction=test_fraction,
            seed=seed,
        )
    not_features = [c for c in (id_column, split_column) if c is not None]
    encoded = encode_table(
        train.drop(columns=not_features, errors="ignore"),
        test.drop(columns=not_features, errors="ignore"),
        label=label,
        categorical=categorical,
    )
    dataset_name = name if name is not None else _stem(path)
    return encoded.to_dataset(dataset_name, train_ids=train_ids, test_ids=test_ids)


def read_table(
    path: Path, *, bad_numbers: BadNumbers = "error", skip: Collection[Hashable] = ()
) -> pd.DataFrame:
    """Read a CSV or Parquet file into a frame indexed by row position, refusing what is wrong.

    A CSV file must have a header of distinct names and as many fields on every row
    (``vfl.data.csv_layout``). Every column but ``skip`` (ids, declared categories) is checked
    for cells that are not numbers in a column of numbers (``vfl.data.numbers``): an error
    naming the file, column, line and value, or missing values with ``bad_numbers="missing"``.

    Raises:
        DataError: If the suffix is not one of ``TABLE_SUFFIXES``, the file cannot be read, or
            it fails one of the checks above.
    """
    suffix = _suffix(path)
    lines = None
    try:
        if suffix in (".csv", ".csv.gz"):
            lines = check_layout(path)
            frame = pd.read_csv(path)
        else:
            frame = pd.read_parquet(path)
    except DataError:
        raise
    except (OSError, ValueError, csv.Error) as error:
        raise DataError(f"cannot read table {path}: {error}") from error
    frame = frame.reset_index(drop=True)
    if lines is not None and len(lines) != len(frame):
        lines = None  # a layout pandas reads otherwise: name rows only
    return clean_numbers(frame, str(path), bad_numbers=bad_numbers, skip=skip, lines=lines)


def stratified_split(
    labels: npt.ArrayLike, *, test_fraction: float, seed: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Split row positions into train and test, stratified by label.

    Each class contributes ``round(test_fraction * n_class)`` rows to the test split, chosen at
    random with ``numpy.random.default_rng(seed)``, but always leaves at least one row in train so
    that every class is known to the encoder. Missing labels are grouped as one class here (the
    encoder rejects them later). Both index arrays come back sorted.

    Args:
        labels: ``(N,)`` label values.
        test_fraction: The share of each class that goes to the test split, in ``(0, 1)``.
        seed: Seed of the random choice.

    Returns:
        ``(train_rows, test_rows)``.
    """
    if not 0.0 < test_fraction < 1.0:
        raise DataError(f"test_fraction must lie strictly between 0 and 1, got {test_fraction}")
    codes = pd.factorize(pd.Series(np.asarray(labels, dtype=object)), use_na_sentinel=False)[0]
    rng = np.random.default_rng(seed)
    test_parts = []
    for code in np.unique(codes):
        rows = np.flatnonzero(codes == code)
        num_test = min(round(test_fraction * len(rows)), len(rows) - 1)
        test_parts.append(rng.permutation(rows)[:num_test])
    test_rows = np.sort(np.concatenate([np.zeros(0, dtype=np.int64), *test_parts])).astype(np.int64)
    train_rows = np.setdiff1d(np.arange(len(codes), dtype=np.int64), test_rows)
    return train_rows, test_rows


def _split(
    frame: pd.DataFrame,
    ids: npt.NDArray[np.generic],
    path: Path,
    *,
    label: str,
    split_column: str | None,
    fraction: float,
    seed: int,
) -> tuple[pd.DataFrame, pd.DataFrame, npt.NDArray[np.generic], npt.NDArray[np.generic]]:
    """Train and test rows and ids: by the split column's marks, or a stratified random split."""
    if split_column is not None:
        is_test = _test_marks(frame, split_column, path)
    else:
        _, test_rows = stratified_split(frame[label].to_numpy(), test_fraction=fraction, seed=seed)
        is_test = np.isin(np.arange(len(frame)), test_rows)
    for split, rows in (("train", ~is_test), ("test", is_test)):
        if not rows.any():
            why = f"; no row of column {split_column!r} says {split!r}" if split_column else ""
            require_rows(
                path, frame[rows], f"the {split} split", why or split_shares(frame[label], fraction)
            )
    return frame[~is_test], frame[is_test], ids[~is_test], ids[is_test]


def split_shares(labels: pd.Series, test_fraction: float) -> str:
    """Why a random split of ``labels`` leaves its test split empty, and what would not.

    Example:
        ``"; test_fraction 0.2 puts round(0.2 x rows) of each class in test, keeping one in
        train: label 'no' 2 rows -> 0, 'yes' 2 rows -> 0; use more rows, a larger
        test_fraction, or a separate test table (test_path)"``
    """
    counts = labels.value_counts(dropna=False).sort_index()
    shares = ", ".join(
        f"{value!r} {n} rows -> {min(round(test_fraction * n), n - 1)}"
        for value, n in counts.items()
    )
    return (
        f"; test_fraction {test_fraction} puts round({test_fraction} x rows) of each class in"
        f" test, keeping one in train: label {shares}; use more rows, a larger test_fraction, or"
        " a separate test table (test_path)"
    )


def require_rows(path: Path, frame: pd.DataFrame, what: str, why: str = "") -> None:
    """Raise ``DataError`` if ``frame`` (``what`` of ``path``, e.g. "the test split") is empty."""
    if len(frame) == 0:
        raise DataError(f"{path}: {what} has no rows{why}")


def _suffix(path: Path) -> str:
    name = path.name.lower()
    for suffix in TABLE_SUFFIXES:
        if name.endswith(suffix):
            return suffix
    raise DataError(
        f"cannot tell the format of {path}: valid suffixes are {', '.join(TABLE_SUFFIXES)}"
    )


def _stem(path: Path) -> str:
    return path.name[: -len(_suffix(path))]


def _require_columns(
    frame: pd.DataFrame, path: Path, label: str, id_column: str | None, split_column: str | None
) -> None:
    for role, column in (("label", label), ("id", id_column), ("split", split_column)):
        if column is not None and column not in frame.columns:
            available = [str(c) for c in frame.columns]
            raise DataError(f"{path} has no {role} column {column!r}; its columns: {available}")


def _test_marks(frame: pd.DataFrame, split_column: str, path: Path) -> npt.NDArray[np.bool_]:
    """Whether each row is marked ``"test"`` (case and surrounding spaces ignored)."""
    markers = frame[split_column].astype("string").str.strip().str.lower()
    valid = markers.isin(SPLIT_VALUES).to_numpy(dtype=bool, na_value=False)
    if not valid.all():
        first = int(np.flatnonzero(~valid)[0])
        raise DataError(
            f"{path}: column {split_column!r} must hold {' or '.join(SPLIT_VALUES)}; row {first}"
            f" holds {frame[split_column].iloc[first]!r}"
        )
    return (markers == "test").to_numpy(dtype=bool, na_value=False)


def sample_ids(frame: pd.DataFrame, id_column: str | None, path: Path) -> npt.NDArray[np.generic]:
    """Return the sample ids of ``frame``: its ``id_column``, or its row positions without one.

    Integer ids come back as ``int64``, others as strings.

    Raises:
        DataError: If an id is missing or repeated (``path`` names the file in the message).
    """
    if id_column is None:
        return frame.index.to_numpy(dtype=np.int64)
    column = frame[id_column]
    if column.isna().any():
        row = column.index[int(np.flatnonzero(column.isna().to_numpy())[0])]
        raise DataError(f"{path}: id column {id_column!r} is empty at row {row}")
    duplicated = column[column.duplicated(keep=False)]
    if len(duplicated):
        examples = sorted({str(value) for value in duplicated})[:5]
        raise DataError(
            f"{path}: id column {id_column!r} has {len(duplicated)} rows with a repeated id,"
            f" for example {examples}; ids must be unique"
        )
    if pd.api.types.is_integer_dtype(column.dtype):
        return column.to_numpy(dtype=np.int64)
    return column.astype(str).to_numpy(dtype=np.str_)
