from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.boost.params import BoostParams
from vfl.boost.split import Histogram, best_split, leaf_weight


def brute_force(
    g: np.ndarray, h: np.ndarray, codes: np.ndarray, bins: list[int], params: BoostParams
) -> tuple[float, int, int, bool] | None:
    """Every candidate by a direct loop over rows, XGBoost's rules spelled out."""
    best = None
    total_g, total_h = float(g.sum()), float(h.sum())
    lam = params.reg_lambda

    def score(a: float, b: float) -> float:
        return a * a / (b + lam)

    for column, k in enumerate(bins):
        for b in range(k - 1):
            for missing_left in (False, True):
                left = (codes[:, column] <= b) | (missing_left & (codes[:, column] == k))
                gl, hl = float(g[left].sum()), float(h[left].sum())
                gr, hr = total_g - gl, total_h - hl
                if min(hl, hr) < params.min_child_weight or min(hl, hr) <= 0:
                    continue
                gain = score(gl, hl) + score(gr, hr) - score(total_g, total_h)
                if gain <= 1e-6 or gain < params.gamma:
                    continue
                if best is None or gain > best[0]:
                    best = (gain, column, b, missing_left)
    return best


@settings(max_examples=60)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 60),
    bins=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    reg_lambda=st.floats(0.0, 5.0),
    gamma=st.sampled_from([0.0, 0.5, 3.0]),
    min_child_weight=st.sampled_from([0.0, 0.3, 2.0]),
)
def test_the_best_split_is_the_brute_force_one(
    seed: int,
    rows: int,
    bins: list[int],
    reg_lambda: float,
    gamma: float,
    min_child_weight: float,
) -> None:
    # Prepare: values on a coarse binary grid, so that every sum is exact in any order
    rng = np.random.default_rng(seed)
    g = rng.integers(-64, 65, size=rows) / 64
    h = rng.integers(1, 17, size=rows) / 64
    codes = np.stack([rng.integers(0, k + 1, size=rows) for k in bins], axis=1)
    params = BoostParams(reg_lambda=reg_lambda, gamma=gamma, min_child_weight=min_child_weight)
    cum_g = np.concatenate(
        [np.cumsum([g[codes[:, j] == b].sum() for b in range(k)]) for j, k in enumerate(bins)]
    )
    cum_h = np.concatenate(
        [np.cumsum([h[codes[:, j] == b].sum() for b in range(k)]) for j, k in enumerate(bins)]
    )

    # Execute
    choice = best_split(
        Histogram(np.array(bins), cum_g, cum_h), (float(g.sum()), float(h.sum())), params
    )

    # Assert
    expected = brute_force(g, h, codes, bins, params)
    if expected is None:
        assert choice is None
    else:
        assert choice is not None
        assert math.isclose(choice.loss_change, expected[0], rel_tol=1e-12, abs_tol=1e-12)
        assert (choice.column, choice.bin, choice.missing_left) == expected[1:]


def test_leaf_weights_follow_xgboost() -> None:
    # Prepare
    params = BoostParams(learning_rate=0.5, reg_lambda=1.0, min_child_weight=2.0)

    # Execute / Assert: -eta G / (H + lambda), and 0 below min_child_weight
    assert leaf_weight(3.0, 2.0, params) == -0.5
    assert leaf_weight(3.0, 1.9, params) == 0.0
