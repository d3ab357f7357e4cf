"""Each holder bins its own columns: quantile cut points of its own values, never shared.

The cut points are XGBoost's for the ``hist`` method (Chen and Guestrin 2016, appendix A: the
prune step of the weighted quantile summary), computed from the column's exact summary: every
distinct value with its rank range. So a column with few distinct values gets one bin per value,
and a value that holds most rows (a zero in a sparse column) does not swallow the other bins: the
ranks to cut at are spread over the rows above the smallest value. On a column with at
most ``8 max_bin`` distinct values the bins equal XGBoost's exactly (XGBoost sketches
wider columns approximately, so there its cuts may differ slightly).

A value ``x`` falls in bin ``b = #{cuts <= x}``, so a split "bins ``<= b`` go left" is the rule
``x < cuts[b]``. A missing value (NaN) has a code of its own, one past the last bin; which way it
goes at a split is learned (XGBoost's default direction).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vfl.boost.params import MAX_BINS
from vfl.errors import DataError

Codes = npt.NDArray[np.uint16]


@dataclass(frozen=True)
class ColumnBins:
    """One column's cut points.

    Attributes:
        cuts: Ascending cut values; the column has ``len(cuts) + 1`` bins and missing values get
            code ``len(cuts) + 1``.
    """

    cuts: npt.NDArray[np.float64]

    @property
    def num_bins(self) -> int:
        """Bins of present values (the missing code is one more)."""
        return len(self.cuts) + 1

    def codes(self, values: npt.NDArray[np.floating]) -> Codes:
        """Bin codes of ``values``; NaN gets the missing code ``num_bins``."""
        codes = np.searchsorted(self.cuts, values, side="right").astype(np.uint16)
        codes[np.isnan(values)] = self.num_bins
        return codes

    def threshold(self, bin_index: int) -> float:
        """The split value of "bins ``<= bin_index`` go left": left when ``x < threshold``."""
        if not 0 <= bin_index < len(self.cuts):
            raise DataError(
                f"bin {bin_index} has no split after it; this column splits after bins"
                f" 0..{len(self.cuts) - 1}"
            )
        return float(self.cuts[bin_index])


@dataclass(frozen=True)
class Binning:
    """The cut points of every column one holder owns, in column order."""

    columns: tuple[ColumnBins, ...]

    @property
    def num_bins(self) -> tuple[int, ...]:
        """Bins of present values per column."""
        return tuple(column.num_bins for column in self.columns)

    def codes(self, features: npt.NDArray[np.floating]) -> Codes:
        """``(N, F)`` bin codes of ``features`` (one column per owned column)."""
        matrix = check_features(features, width=len(self.columns))
        codes = np.empty(matrix.shape, dtype=np.uint16)
        for j, column in enumerate(self.columns):
            codes[:, j] = column.codes(matrix[:, j])
        return codes


def fit_binning(features: npt.NDArray[np.floating], max_bin: int) -> Binning:
    """Cut points for every column of ``features`` from its own non-missing values."""
    if not 2 <= max_bin <= MAX_BINS:
        raise DataError(f"max_bin must lie in [2, {MAX_BINS}], got {max_bin}")
    matrix = check_features(features)
    return Binning(tuple(_column_cuts(matrix[:, j], max_bin) for j in range(matrix.shape[1])))


SKETCH_FACTOR = 8
"""XGBoost first prunes a column's summary to ``8 max_bin`` entries, then to ``max_bin + 1``."""


@dataclass(frozen=True)
class _Summary:
    """Distinct values with their rank ranges (float32, as XGBoost keeps them)."""

    values: npt.NDArray[np.float64]
    rmin: npt.NDArray[np.float32]  # rows strictly below the value
    rmax: npt.NDArray[np.float32]  # rows at or below the value
    weight: npt.NDArray[np.float32]  # rows equal to the value

    def take(self, keep: list[int]) -> _Summary:
        index = np.array(keep, dtype=np.int64)
        return _Summary(self.values[index], self.rmin[index], self.rmax[index], self.weight[index])


def _column_cuts(values: npt.NDArray[np.float64], max_bin: int) -> ColumnBins:
    present = values[~np.isnan(values)]
    distinct, counts = np.unique(present, return_counts=True)
    weight = counts.astype(np.float32)
    rmin = (np.cumsum(counts) - counts).astype(np.float32)
    summary = _Summary(distinct, rmin, (rmin + weight).astype(np.float32), weight)
    summary = _prune(summary, min(len(present), max_bin * SKETCH_FACTOR))
    summary = _prune(summary, max_bin + 1)
    cuts: list[float] = []
    for value in summary.values[1 : min(len(summary.values), max_bin)].tolist():
        if not cuts or value > cuts[-1]:
            cuts.append(value)
    return ColumnBins(np.array(cuts, dtype=np.float64))


def _prune(summary: _Summary, size: int) -> _Summary:
    """At most ``size`` entries whose ranks are spread evenly over the summary's.

    Keeps the first and last entries; for each of the ``size - 2`` evenly spaced target ranks in
    between, keeps whichever neighbouring entry's rank range lies nearer (float32 arithmetic, as
    XGBoost's ``WQSummary::SetPrune``, for the same cut points).
    """
    count = len(summary.values)
    if count <= size:
        return summary
    f32 = np.float32
    rmin, rmax, weight = summary.rmin, summary.rmax, summary.weight
    begin, span, steps = rmax[0], f32(rmin[-1] - rmax[0]), f32(size - 1)
    keep, i = [0], 1
    for k in range(1, size - 1):
        target = f32(2) * (f32(f32(k) * span) / steps + begin)
        while i < count - 1 and target >= rmax[i + 1] + rmin[i + 1]:
            i += 1
        if i == count - 1:
            break
        pick = i if target < f32(rmin[i] + weight[i]) + f32(rmax[i + 1] - weight[i + 1]) else i + 1
        if pick != keep[-1]:
            keep.append(pick)
    if keep[-1] != count - 1:
        keep.append(count - 1)
    return summary.take(keep)


def check_features(
    features: npt.NDArray[np.floating], *, width: int | None = None
) -> npt.NDArray[np.float64]:
    """``features`` as a 2-D float64 matrix; NaN marks a missing value, infinity is refused."""
    matrix = np.asarray(features, dtype=np.float64)
    if matrix.ndim != 2:
        raise DataError(f"features must be a 2-D (rows, columns) matrix, got shape {matrix.shape}")
    if width is not None and matrix.shape[1] != width:
        raise DataError(f"features have {matrix.shape[1]} columns; this holder binned {width}")
    if np.isinf(matrix).any():
        row, column = np.argwhere(np.isinf(matrix))[0]
        raise DataError(
            f"features hold infinity at row {row}, column {column}; use NaN for a missing value"
        )
    return matrix
