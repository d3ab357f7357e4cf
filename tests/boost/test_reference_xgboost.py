"""The reference trees are XGBoost's ``hist`` trees: same splits, same leaves (float32 aside)."""

from __future__ import annotations

import numpy as np
import pytest
import xgboost as xgb

from tests.boost.helpers import vertical_table
from vfl.boost import BoostParams, fit_reference
from vfl.boost.objectives import Objective, default_base_score


def xgboost_predictions(
    params: BoostParams, labels: np.ndarray, features: np.ndarray, **overrides: float
) -> np.ndarray:
    base = default_base_score(Objective(params.objective), labels)
    settings = {
        "objective": params.objective,
        "tree_method": "hist",
        "max_depth": params.max_depth,
        "eta": params.learning_rate,
        "lambda": params.reg_lambda,
        "gamma": params.gamma,
        "min_child_weight": params.min_child_weight,
        "max_bin": params.max_bin,
        "base_score": base,
        "nthread": 1,
        **overrides,
    }
    booster = xgb.train(settings, xgb.DMatrix(features, label=labels), params.num_trees)
    predictions: np.ndarray = booster.predict(xgb.DMatrix(features)).astype(np.float64)
    return predictions


CASES = [
    (BoostParams(num_trees=5, max_depth=3, max_bin=8), 0.0, 0),
    (BoostParams(num_trees=3, max_depth=4, max_bin=4, reg_lambda=0.0), 0.0, 1),
    (BoostParams(num_trees=4, max_depth=2, max_bin=16, gamma=1.0, min_child_weight=3.0), 0.0, 2),
    (BoostParams(num_trees=5, max_depth=3, max_bin=8, learning_rate=0.1), 0.1, 3),
    (BoostParams(num_trees=4, max_depth=3, max_bin=6, objective="reg:squarederror"), 0.0, 4),
    (BoostParams(num_trees=3, max_depth=3, max_bin=8, objective="reg:squarederror"), 0.1, 5),
]


@pytest.mark.parametrize(("params", "missing", "seed"), CASES)
def test_reference_predictions_equal_xgboosts(
    params: BoostParams, missing: float, seed: int
) -> None:
    # Prepare: at most 8 max_bin distinct values per column, so the bins are XGBoost's
    regression = params.objective == "reg:squarederror"
    labels, blocks = vertical_table(
        400,
        (2, 2, 1),
        seed=seed,
        distinct=params.max_bin + 2,
        missing=missing,
        regression=regression,
    )
    features = np.concatenate(list(blocks.values()), axis=1)

    # Execute
    reference = fit_reference(labels, blocks, params)
    ours = reference.objective.output(reference.predict_margins(blocks))
    theirs = xgboost_predictions(params, labels, features)

    # Assert: XGBoost keeps g and h in float32, hence the tolerance
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=2e-5 * max(1.0, np.abs(theirs).max()))


def test_the_comparison_sees_a_different_hyper_parameter() -> None:
    # Prepare: the negative control: XGBoost with another lambda
    params, _, seed = CASES[0]
    labels, blocks = vertical_table(400, (2, 2, 1), seed=seed, distinct=10)
    features = np.concatenate(list(blocks.values()), axis=1)

    # Execute
    reference = fit_reference(labels, blocks, params)
    ours = reference.objective.output(reference.predict_margins(blocks))
    theirs = xgboost_predictions(params, labels, features, **{"lambda": 3.0})

    # Assert
    assert np.abs(ours - theirs).max() > 1e-3
