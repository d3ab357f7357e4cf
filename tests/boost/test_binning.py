from __future__ import annotations

import numpy as np
import pytest
import xgboost as xgb
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.boost.binning import fit_binning
from vfl.errors import DataError


def xgboost_cuts(features: np.ndarray, max_bin: int) -> list[np.ndarray]:
    """XGBoost's hist cut points per column, without its lower and upper sentinels."""
    matrix = xgb.QuantileDMatrix(features.astype(np.float32), max_bin=max_bin)
    pointers, values = matrix.get_quantile_cut()
    return [values[pointers[j] : pointers[j + 1]][1:-1] for j in range(features.shape[1])]


@settings(max_examples=30)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(20, 3000),
    distinct=st.integers(2, 200),
    max_bin=st.integers(2, 64),
    zeros=st.floats(0.0, 0.95),
)
def test_cut_points_equal_xgboosts(
    seed: int, rows: int, distinct: int, max_bin: int, zeros: float
) -> None:
    # Prepare: columns with at most 8 max_bin distinct values (where XGBoost's summary is exact,
    # not sketched), some with a heavy zero, one spread like a normal
    rng = np.random.default_rng(seed)
    distinct = min(distinct, 8 * max_bin)
    features = rng.integers(1, distinct + 1, size=(rows, 3)).astype(np.float64)
    features[rng.random(features.shape) < zeros] = 0.0
    features[:, 2] = np.clip(np.round(rng.normal(size=rows) * distinct / 6), 0, distinct - 1) / 7

    # Execute
    ours = fit_binning(features, max_bin)

    # Assert
    for column, theirs in zip(ours.columns, xgboost_cuts(features, max_bin), strict=True):
        np.testing.assert_array_equal(column.cuts.astype(np.float32), theirs)


def test_a_heavy_value_does_not_swallow_the_other_bins() -> None:
    # Prepare: 95% zeros, 100 other values
    values = np.zeros(20_000)
    values[:1000] = np.repeat(np.arange(1, 101), 10)

    # Execute
    bins = fit_binning(values[:, None], 16).columns[0]

    # Assert
    assert bins.num_bins == 16


@given(
    values=st.lists(st.one_of(st.integers(-5, 5).map(float), st.just(float("nan"))), min_size=2),
    max_bin=st.integers(2, 8),
)
def test_codes_agree_with_the_threshold_rule(values: list[float], max_bin: int) -> None:
    # Prepare
    column = np.array(values)
    bins = fit_binning(column[:, None], max_bin).columns[0]

    # Execute
    codes = bins.codes(column)

    # Assert: a missing value has its own code; otherwise code <= b exactly when x < cuts[b]
    assert (codes[np.isnan(column)] == bins.num_bins).all()
    present = ~np.isnan(column)
    for b in range(bins.num_bins - 1):
        np.testing.assert_array_equal(codes[present] <= b, column[present] < bins.threshold(b))


def test_infinity_and_a_wrong_shape_are_refused() -> None:
    with pytest.raises(DataError, match="infinity at row 1, column 0"):
        fit_binning(np.array([[1.0], [np.inf]]), 4)
    with pytest.raises(DataError, match="2-D"):
        fit_binning(np.zeros(3), 4)
    with pytest.raises(DataError, match="max_bin"):
        fit_binning(np.zeros((3, 1)), 1)


def test_a_split_after_the_last_bin_is_refused() -> None:
    bins = fit_binning(np.array([[1.0], [2.0]]), 4).columns[0]
    with pytest.raises(DataError, match="bin 1 has no split after it"):
        bins.threshold(1)
