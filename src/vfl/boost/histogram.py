"""Gradient histograms in the clear: the label holder's own columns, and the reference's.

A node's histogram on a column sums ``g`` and ``h`` over the node's rows in each bin; the split
search needs them cumulative over the present-value bins (the missing code's sum is what the
node's total leaves over). Values lie on the fixed-point grid (``fixed_point``), so every sum here
is exact and equals what the encrypted path decrypts.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from vfl.boost.split import Histogram

Floats = npt.NDArray[np.float64]
Rows = npt.NDArray[np.int64]


def bin_sums(
    codes: npt.NDArray[np.uint16],
    bins: npt.NDArray[np.int64],
    rows: Rows,
    values: Floats,
) -> list[Floats]:
    """Per column, the sum of ``values`` over ``rows`` in each bin, the missing code last."""
    selected = values[rows]
    return [
        np.bincount(codes[rows, j], weights=selected, minlength=int(k) + 1).astype(np.float64)
        for j, k in enumerate(bins.tolist())
    ]


def cumulative(per_column: list[Floats], bins: npt.NDArray[np.int64]) -> Floats:
    """Per-column running sums over present bins (the missing code dropped), concatenated."""
    if not per_column:
        return np.zeros(0)
    return np.concatenate(
        [np.cumsum(sums[: int(k)]) for sums, k in zip(per_column, bins.tolist(), strict=True)]
    )


def plain_histogram(
    codes: npt.NDArray[np.uint16],
    bins: npt.NDArray[np.int64],
    rows: Rows,
    gradients: Floats,
    hessians: Floats,
) -> Histogram:
    """The cumulative histogram of ``rows`` over every column of ``codes``."""
    return Histogram(
        bins=bins,
        gradients=cumulative(bin_sums(codes, bins, rows, gradients), bins),
        hessians=cumulative(bin_sums(codes, bins, rows, hessians), bins),
    )
