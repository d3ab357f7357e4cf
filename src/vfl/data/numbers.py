"""Columns of numbers with a few cells that are not numbers: an error, or (if asked) missing.

One stray word in a column of numbers makes the whole column text, and text columns are one-hot
encoded: hundreds of columns out of one numeric feature, without a word. So a column counts as
**numeric** when at least ``MOSTLY_NUMBERS`` (95 %) of its filled cells are numbers, and its
other cells are **bad numbers**: ``bad_numbers = "error"`` stops with the file, column, row and
value; ``"missing"`` reads them as missing values (imputed and flagged like empty cells).
Columns with more cells that are not numbers are text (categories); they are left alone.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Hashable, Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from vfl.errors import DataError

BadNumbers = Literal["error", "missing"]
BAD_NUMBERS: tuple[BadNumbers, ...] = ("error", "missing")
MOSTLY_NUMBERS = 0.95
"""The share of a column's filled cells that must be numbers for the column to be numeric."""

log = logging.getLogger(__name__)


def is_numeric(series: pd.Series) -> bool:
    """Whether ``series`` holds numbers by its dtype (booleans are not numbers)."""
    dtype = series.dtype
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def bad_numbers_of(series: pd.Series) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """``series`` read as numbers (NaN where missing or not a number) and where the bad cells are.

    The mask is empty (all false) unless the column is numeric by ``MOSTLY_NUMBERS``.
    """
    parsed = pd.to_numeric(series.astype("string").str.strip(), errors="coerce")
    values = parsed.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = (series.notna() & parsed.isna()).to_numpy(dtype=bool)
    filled = int(series.notna().sum())
    if filled and (filled - int(bad.sum())) / filled < MOSTLY_NUMBERS:
        bad = np.zeros(len(series), dtype=bool)
    return values, bad


def clean_numbers(
    frame: pd.DataFrame,
    source: str,
    *,
    bad_numbers: BadNumbers = "error",
    skip: Collection[Hashable] = (),
    lines: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Check every column of ``frame`` but ``skip`` for bad numbers; see the module docstring.

    Args:
        frame: A table indexed by row position.
        source: The file, for messages.
        bad_numbers: ``"error"`` or ``"missing"``.
        skip: Columns never checked (ids, declared categories).
        lines: The file line of each row, for messages (CSV files).

    Returns:
        ``frame``, with the bad cells of each numeric column read as missing (``"missing"``).

    Raises:
        DataError: on the first bad number, with ``"error"``.
    """
    if bad_numbers not in BAD_NUMBERS:
        raise DataError(f"bad_numbers must be one of {list(BAD_NUMBERS)}, got {bad_numbers!r}")
    for column in frame.columns:
        if column in skip or is_numeric(frame[column]):
            continue
        values, bad = bad_numbers_of(frame[column])
        if not bad.any():
            continue
        first = int(np.flatnonzero(bad)[0])
        where = f"{cell_place(first, lines)} holds {frame[column].iloc[first]!r}"
        shown = f"{source}: column {str(column)!r}"
        filled = int(frame[column].notna().sum())
        if bad_numbers == "error":
            raise DataError(
                f"{shown} holds numbers except in {int(bad.sum())} of its {filled} filled cells;"
                f' {where}. Fix them, or set bad_numbers = "missing" in [data] to read them as'
                " missing values"
            )
        log.warning(
            "%s: read %d cells that are not numbers as missing; %s", shown, bad.sum(), where
        )
        frame[column] = values
    return frame


def cell_place(row: int, lines: Sequence[int] | None) -> str:
    """``row 17`` (counted from 0 after the header), with its file line when known."""
    if lines is None or row >= len(lines):
        return f"row {row}"
    return f"line {lines[row]} (row {row})"
