"""A privacy budget: epsilon after some epochs, and the most epochs a budget allows.

Each training sample is released once per shuffled epoch, so ``K`` epochs compose ``K`` copies
of a mechanism's per-epoch event (``PbmEvent`` for the embeddings, ``GaussianEvent`` for the
gradients). RDP composes additively, so ``ε(K) = min_α [K ε₁(α) + log(1/δ)/(α − 1)]`` grows with
``K`` and the largest ``K`` within a budget is found by bisection on one RDP curve.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import numpy as np

from vfl.privacy.accountant import RdpAccountant
from vfl.privacy.analysis import rdp_to_epsilon
from vfl.privacy.events import PrivacyEvent


class EpochBudget:
    """Epsilon of ``K`` epochs of one mechanism, from its per-epoch RDP curve (computed once).

    Args:
        event: What one epoch releases of each sample.
        delta: The delta of every epsilon.
    """

    def __init__(self, event: PrivacyEvent, delta: float) -> None:
        accountant = RdpAccountant().compose(event)
        self.orders = accountant.orders
        self.curve = accountant.rdp
        self.delta = delta

    @classmethod
    def worst_of(cls, events: Iterable[PrivacyEvent], delta: float) -> EpochBudget:
        """The budget of epochs that may each release any one of ``events``.

        Its curve is the events' pointwise largest RDP: ``K`` such epochs compose to at most
        ``K`` times it at every order, whichever events they were.

        Raises:
            ValueError: if ``events`` is empty.
        """
        budgets = [cls(event, delta) for event in events]
        if not budgets:
            raise ValueError("worst_of needs at least one event")
        worst = budgets[0]
        for budget in budgets[1:]:
            worst.curve = np.maximum(worst.curve, budget.curve)
        return worst

    def epsilon(self, epochs: int) -> float:
        """Epsilon at ``delta`` after ``epochs`` epochs (0 for none)."""
        if epochs == 0:
            return 0.0
        with warnings.catch_warnings():  # an optimal order at the grid's edge only loosens it
            warnings.simplefilter("ignore", UserWarning)
            rdp = np.where(self.curve == 0, 0.0, epochs * self.curve)
            return rdp_to_epsilon(orders=self.orders, rdp=rdp, delta=self.delta)[0]

    def max_epochs(self, max_epsilon: float, *, limit: int) -> int:
        """The largest ``K <= limit`` whose epsilon is at most ``max_epsilon``."""
        if self.epsilon(limit) <= max_epsilon:
            return limit
        low, high = 0, limit  # epsilon(low) fits, epsilon(high) does not
        while high - low > 1:
            middle = (low + high) // 2
            if self.epsilon(middle) <= max_epsilon:
                low = middle
            else:
                high = middle
        return low
