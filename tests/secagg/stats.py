"""Chi-square checks that a block of received values carries no information about the counts.

Usable on any transcript: decode each party's masked payload and call ``assert_masked`` with the
counts that party really held (known to the test, never to the server).
"""

from __future__ import annotations

import math

import numpy as np

SIGNIFICANCE = 1e-6
"""Each check fails a correct masking this rarely. Masks from the operating system differ at every
run, and a suite runs dozens of these checks: at 1e-3 one of them failed a correct run about
every hundred runs. Unmasked or dependent values give statistics in the hundreds or more (the
negative controls), far above the critical value at either level."""
_Z = 4.753424308817087  # the standard normal quantile at 1 - SIGNIFICANCE


def chi_square_critical(df: int) -> float:
    """Upper ``SIGNIFICANCE`` quantile of chi-square(df), Wilson-Hilferty (~1% off, df >= 10)."""
    h = 2.0 / (9.0 * df)
    return df * (1.0 - h + _Z * math.sqrt(h)) ** 3


def uniformity_statistic(values: np.ndarray, *, bins: int) -> float:
    """Pearson's goodness-of-fit statistic of ``values`` against uniform on ``0..bins-1``."""
    observed = np.bincount(values.reshape(-1).astype(np.int64), minlength=bins)
    expected = values.size / bins
    return float(((observed - expected) ** 2 / expected).sum())


def independence_statistic(values: np.ndarray, counts: np.ndarray, *, bins: int) -> float:
    """Pearson's statistic of the contingency table ``count x value`` (empty columns dropped)."""
    rows = np.unique(counts)
    table = np.stack(
        [np.bincount(values[counts == row].astype(np.int64), minlength=bins) for row in rows]
    ).astype(np.float64)
    table = table[:, table.sum(axis=0) > 0]
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / table.sum()
    return float(((table - expected) ** 2 / expected).sum())


def assert_masked(received: np.ndarray, counts: np.ndarray, *, bits: int) -> None:
    """Fail unless ``received`` looks uniform on ``Z_{2^k}`` and independent of ``counts``.

    Needs ``k`` small (so that every residue is seen often) and enough values: about
    ``20 * 2^k * (number of distinct counts)`` or more.
    """
    bins = 1 << bits
    uniform = uniformity_statistic(received, bins=bins)
    assert uniform < chi_square_critical(bins - 1), f"not uniform: chi2 = {uniform:.1f}"
    if len(np.unique(counts)) > 1:
        dependence = independence_statistic(received.reshape(-1), counts.reshape(-1), bins=bins)
        df = (len(np.unique(counts)) - 1) * (bins - 1)
        assert dependence < chi_square_critical(df), f"depends on counts: chi2 = {dependence:.1f}"
