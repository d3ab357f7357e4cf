"""Losses: per-row gradients and hessians of the margin, and the link from margin to output.

Second-order boosting (Chen and Guestrin 2016, "XGBoost", eq. 3) needs, for each row ``i``, the
first and second derivatives of its loss at the current margin ``f_i``: ``g_i`` and ``h_i``. The
label holder computes them; nobody else ever sees them in the clear.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vfl.errors import DataError

Floats = npt.NDArray[np.float64]

MIN_HESSIAN = 1e-16
"""XGBoost's floor on the logistic hessian ``p (1 - p)``, so a saturated row keeps a weight."""


@dataclass(frozen=True)
class Objective:
    """One loss, by its XGBoost name."""

    name: str

    def gradients(self, margins: Floats, labels: Floats) -> tuple[Floats, Floats]:
        """``(g, h)``: the loss's first and second derivatives at ``margins``."""
        if self.name == "binary:logistic":
            p = sigmoid(margins)
            return p - labels, np.maximum(p * (1.0 - p), MIN_HESSIAN)
        return margins - labels, np.ones_like(margins)

    def base_margin(self, base_score: float) -> float:
        """The margin of the initial prediction ``base_score`` (a probability for logistic)."""
        if self.name == "binary:logistic":
            return float(np.log(base_score / (1.0 - base_score)))
        return float(base_score)

    def output(self, margins: Floats) -> Floats:
        """Predictions from margins: probabilities for logistic, the margin for regression."""
        return sigmoid(margins) if self.name == "binary:logistic" else margins

    def check_labels(self, labels: Floats) -> None:
        """Refuse labels the loss cannot take (binary:logistic needs 0 and 1 only)."""
        if not np.isfinite(labels).all():
            raise DataError("labels contain NaN or infinity; boosting needs finite labels")
        if self.name == "binary:logistic" and not np.isin(labels, (0.0, 1.0)).all():
            bad = float(labels[~np.isin(labels, (0.0, 1.0))][0])
            raise DataError(f"binary:logistic needs labels 0 or 1, got {bad}")


def sigmoid(margins: Floats) -> Floats:
    """``1 / (1 + exp(-x))`` without overflow warnings for large ``|x|``."""
    clipped = np.clip(margins, -700.0, 700.0)
    result: Floats = 1.0 / (1.0 + np.exp(-clipped))
    return result


def default_base_score(objective: Objective, labels: Floats) -> float:
    """The mean label, kept inside (0, 1) for logistic so that its margin is finite."""
    mean = float(np.mean(labels))
    if objective.name == "binary:logistic":
        return min(max(mean, 1e-6), 1.0 - 1e-6)
    return mean
