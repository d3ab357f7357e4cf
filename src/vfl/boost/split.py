"""Split finding from cumulative gradient histograms: XGBoost's gain and validity rules.

For a node with sums ``(G, H)`` and a candidate sending ``(G_L, H_L)`` left and the rest right,
the loss reduction is (Chen and Guestrin 2016, eq. 7, as XGBoost computes it, without the 1/2)

    loss_chg = G_L^2 / (H_L + lambda) + G_R^2 / (H_R + lambda) - G^2 / (H + lambda).

A candidate is valid when both children have hessian sums ``>= min_child_weight`` and above 0,
and ``loss_chg > 1e-6`` and ``loss_chg >= gamma`` (XGBoost's ``hist`` updater checks ``gamma``
when it grows a node). The best valid candidate wins; ties go to the earlier candidate in the
order (holder, column, bin, missing right before missing left).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vfl.boost.params import BoostParams
from vfl.errors import ProtocolError

Floats = npt.NDArray[np.float64]

MIN_LOSS_CHANGE = 1e-6
"""XGBoost's ``kRtEps``: a split must reduce the loss by more than this."""


@dataclass(frozen=True)
class Histogram:
    """Cumulative ``(G, H)`` of one node over one holder's columns.

    Attributes:
        bins: Present-value bins per column, ``(F,)``.
        gradients: Flat, column by column: ``gradients[o_f + b]`` is the sum of ``g`` over the
            node's rows in bins ``0..b`` of column ``f`` (``o_f`` = bins of earlier columns).
        hessians: The same for ``h``.
    """

    bins: npt.NDArray[np.int64]
    gradients: Floats
    hessians: Floats

    def __post_init__(self) -> None:
        total = int(self.bins.sum())
        if (self.bins < 1).any() or len(self.gradients) != total or len(self.hessians) != total:
            raise ProtocolError(
                f"a histogram with bins {self.bins.tolist()} needs {total} sums, got"
                f" {len(self.gradients)} gradient and {len(self.hessians)} hessian sums"
            )


@dataclass(frozen=True)
class SplitChoice:
    """The best split of one node on one holder's columns, and the ``(G, H)`` it sends left."""

    loss_change: float
    column: int
    bin: int
    missing_left: bool
    left: tuple[float, float]


def leaf_weight(gradient_sum: float, hessian_sum: float, params: BoostParams) -> float:
    """``-eta G / (H + lambda)``; 0 where ``H`` is below ``min_child_weight`` (as XGBoost)."""
    if hessian_sum < params.min_child_weight or hessian_sum <= 0.0:
        return 0.0
    return -params.learning_rate * gradient_sum / (hessian_sum + params.reg_lambda)


def best_split(
    histogram: Histogram, total: tuple[float, float], params: BoostParams
) -> SplitChoice | None:
    """The best valid split of a node with sums ``total = (G, H)``, or ``None`` if none is."""
    bins = histogram.bins
    ends = np.cumsum(bins)
    starts = ends - bins
    column_of = np.repeat(np.arange(len(bins)), bins)
    bin_of = np.arange(int(ends[-1]) if len(ends) else 0) - starts[column_of]
    if not len(bin_of):
        return None
    missing_g = total[0] - histogram.gradients[ends - 1]
    missing_h = total[1] - histogram.hessians[ends - 1]
    left_g = np.stack([histogram.gradients, histogram.gradients + missing_g[column_of]], axis=1)
    left_h = np.stack([histogram.hessians, histogram.hessians + missing_h[column_of]], axis=1)
    gains = loss_changes(left_g, left_h, total, params)
    gains[bin_of == bins[column_of] - 1, :] = -np.inf  # no split after a column's last bin
    flat = int(np.argmax(gains))
    position, direction = divmod(flat, 2)
    if not np.isfinite(gains.flat[flat]):
        return None
    return SplitChoice(
        loss_change=float(gains.flat[flat]),
        column=int(column_of[position]),
        bin=int(bin_of[position]),
        missing_left=bool(direction),
        left=(float(left_g[position, direction]), float(left_h[position, direction])),
    )


def loss_changes(
    left_g: Floats, left_h: Floats, total: tuple[float, float], params: BoostParams
) -> Floats:
    """XGBoost's loss change of every candidate, ``-inf`` where a candidate is not valid."""
    right_g, right_h = total[0] - left_g, total[1] - left_h
    lam = params.reg_lambda
    with np.errstate(divide="ignore", invalid="ignore"):
        gains = (
            left_g * left_g / (left_h + lam)
            + right_g * right_g / (right_h + lam)
            - total[0] * total[0] / (total[1] + lam)
        )
    valid = (
        (left_h >= params.min_child_weight)
        & (right_h >= params.min_child_weight)
        & (left_h > 0.0)
        & (right_h > 0.0)
        & (gains > MIN_LOSS_CHANGE)
        & (gains >= params.gamma)
    )
    result: Floats = np.where(valid, gains, -np.inf)
    return result
