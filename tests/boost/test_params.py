from __future__ import annotations

import numpy as np
import pytest

from vfl.boost import BoostParams
from vfl.boost.objectives import Objective
from vfl.errors import ConfigError, DataError


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("num_trees", 0, r"num_trees must be an integer in \[1, 100000\], got 0"),
        ("max_depth", 2.5, r"max_depth must be an integer in \[1, 30\], got 2.5"),
        ("max_bin", 1, r"max_bin must be an integer in \[2, 4096\], got 1"),
        ("learning_rate", 0.0, r"learning_rate must lie in \(0.0, 1.0\], got 0.0"),
        ("reg_lambda", -1.0, r"reg_lambda must lie in \[0.0, inf\], got -1.0"),
        ("gamma", float("nan"), "gamma must be a finite number, got nan"),
        ("objective", "multi:softmax", "objective 'multi:softmax' is not supported; valid:"),
        ("base_score", 1.0, "base_score 1.0 is not a probability strictly between 0 and 1"),
    ],
)
def test_bad_hyper_parameters_are_named(field: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BoostParams(**{field: value})  # type: ignore[arg-type]


def test_logistic_labels_must_be_zero_or_one() -> None:
    with pytest.raises(DataError, match=r"binary:logistic needs labels 0 or 1, got 2\.0"):
        Objective("binary:logistic").check_labels(np.array([0.0, 1.0, 2.0]))
    with pytest.raises(DataError, match="NaN or infinity"):
        Objective("reg:squarederror").check_labels(np.array([0.0, np.nan]))


def test_gradients_of_the_two_losses() -> None:
    # Prepare
    margins, labels = np.array([0.0, 2.0]), np.array([1.0, 0.0])

    # Execute
    g_log, h_log = Objective("binary:logistic").gradients(margins, labels)
    g_sq, h_sq = Objective("reg:squarederror").gradients(margins, labels)

    # Assert
    p = 1 / (1 + np.exp(-2.0))
    np.testing.assert_allclose(g_log, [-0.5, p])
    np.testing.assert_allclose(h_log, [0.25, p * (1 - p)])
    np.testing.assert_array_equal(g_sq, [-1.0, 2.0])
    np.testing.assert_array_equal(h_sq, [1.0, 1.0])
