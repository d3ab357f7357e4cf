"""The hyper-parameters of a boosted-tree run, with their ranges checked where they are built.

They mean what XGBoost's parameters of the same names mean (``num_boost_round``, ``max_depth``,
``eta``, ``lambda``, ``gamma``, ``min_child_weight``, ``max_bin``), so that a centralized
XGBoost with the same values is the reference of a SecureBoost run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vfl.errors import ConfigError

OBJECTIVES = ("binary:logistic", "reg:squarederror")
"""The losses supported: XGBoost's names."""

MAX_BINS = 4096
"""The most bins a column may have (bin codes are stored as ``uint16`` with one missing code)."""


@dataclass(frozen=True)
class BoostParams:
    """What a boosted-tree run grows.

    Attributes:
        num_trees: Boosting rounds (XGBoost's ``num_boost_round``).
        max_depth: Depth of every tree; a root alone has depth 0.
        learning_rate: Shrinkage applied to every leaf weight (``eta``).
        reg_lambda: L2 regularisation of leaf weights (``lambda``).
        gamma: Least loss reduction a split must bring (``min_split_loss``).
        min_child_weight: Least hessian sum in each child of a split.
        max_bin: Most bins per column (quantile cut points of the column's own values).
        objective: ``"binary:logistic"`` or ``"reg:squarederror"``.
        base_score: Initial prediction before any tree, in the objective's output space (a
            probability for ``binary:logistic``); ``None`` takes the mean label.
    """

    num_trees: int = 10
    max_depth: int = 3
    learning_rate: float = 0.3
    reg_lambda: float = 1.0
    gamma: float = 0.0
    min_child_weight: float = 1.0
    max_bin: int = 32
    objective: str = "binary:logistic"
    base_score: float | None = None

    def __post_init__(self) -> None:
        _check_int("num_trees", self.num_trees, 1, 100_000)
        _check_int("max_depth", self.max_depth, 1, 30)
        _check_int("max_bin", self.max_bin, 2, MAX_BINS)
        _check_float("learning_rate", self.learning_rate, low=0.0, low_open=True, high=1.0)
        _check_float("reg_lambda", self.reg_lambda, low=0.0)
        _check_float("gamma", self.gamma, low=0.0)
        _check_float("min_child_weight", self.min_child_weight, low=0.0)
        if self.objective not in OBJECTIVES:
            raise ConfigError(
                f"objective {self.objective!r} is not supported; valid: {', '.join(OBJECTIVES)}"
            )
        if self.base_score is not None:
            _check_float("base_score", self.base_score)
            if self.objective == "binary:logistic" and not 0.0 < self.base_score < 1.0:
                raise ConfigError(
                    f"base_score {self.base_score} is not a probability strictly between 0 and"
                    " 1, as binary:logistic needs"
                )


def _check_int(name: str, value: object, low: int, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ConfigError(f"{name} must be an integer in [{low}, {high}], got {value!r}")


def _check_float(
    name: str,
    value: object,
    *,
    low: float = -math.inf,
    low_open: bool = False,
    high: float = math.inf,
) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number, got {value!r}")
    below = value <= low if low_open else value < low
    if below or value > high:
        bracket = "(" if low_open else "["
        raise ConfigError(f"{name} must lie in {bracket}{low}, {high}], got {value!r}")
