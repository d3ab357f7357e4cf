"""A privacy budget: epsilon after some epochs, and the most epochs a budget allows.

Each training sample is released once per shuffled epoch, so ``K`` epochs compose ``K`` copies
of a mechanism's per-epoch event (``PbmEvent`` for the embeddings, ``GaussianEvent``s for the
gradients). Epsilon grows with ``K``, so the largest ``K`` within a budget is found by bisection.

- PBM (and any event with an RDP curve): vfl's exact RDP, composed additively, converted with
  the tighter conversion of Balle et al. 2020 (Theorem 21) / Canonne, Kamath and Steinke 2020
  (Proposition 12), the one dp-accounting's RDP accountant uses (``EpochBudget``);
- Gaussian releases only: dp-accounting's PLD accountant (``GaussianEpochBudget``).

``epoch_budget`` picks the right one; both answer ``epsilon(K)`` and ``max_epochs``, so a run's
budget check and the epsilon it reports are the same computation.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Protocol

import numpy as np

from vfl.privacy.accountant import RdpAccountant, UnsupportedEventError
from vfl.privacy.analysis import Conversion, rdp_to_epsilon
from vfl.privacy.events import PrivacyEvent, SelfComposedEvent
from vfl.privacy.pld import describe, flatten, pld_epsilon, rdp_epsilon

RDP_CONVERSION = (
    "vfl's exact RDP (PBM: worst case over the other parties' inputs), converted by Balle et al."
    " 2020 (Theorem 21) / Canonne, Kamath and Steinke 2020 (Proposition 12) as dp-accounting's"
    " RDP accountant does, over orders 1.0001 to 256 and infinity"
)
"""How an RDP epsilon is turned into (epsilon, delta), for summaries."""


class Spending(Protocol):
    """Epsilon after ``K`` epochs of one mechanism, and the most epochs within a budget."""

    delta: float

    def epsilon(self, epochs: int) -> float:
        """Epsilon at ``delta`` after ``epochs`` epochs (0 for none)."""
        ...

    def max_epochs(self, max_epsilon: float, *, limit: int) -> int:
        """The largest ``K <= limit`` whose epsilon is at most ``max_epsilon``."""
        ...

    def describe(self) -> str:
        """How the epsilon is computed (accountant and conversion)."""
        ...


def epoch_budget(event: PrivacyEvent, delta: float) -> EpochBudget | GaussianEpochBudget:
    """The budget of epochs that each release ``event``: PLD for Gaussian releases, else RDP."""
    try:
        flatten(event)
    except UnsupportedEventError:
        return EpochBudget(event, delta)
    return GaussianEpochBudget(event, delta)


def _largest_fitting(budget: Spending, max_epsilon: float, limit: int) -> int:
    if budget.epsilon(limit) <= max_epsilon:
        return limit
    low, high = 0, limit  # epsilon(low) fits, epsilon(high) does not
    while high - low > 1:
        middle = (low + high) // 2
        if budget.epsilon(middle) <= max_epsilon:
            low = middle
        else:
            high = middle
    return low


class EpochBudget:
    """Epsilon of ``K`` epochs of one mechanism, from its per-epoch RDP curve (computed once).

    Args:
        event: What one epoch releases of each sample.
        delta: The delta of every epsilon.
        conversion: RDP to (epsilon, delta); the tighter ``improved`` by default.
    """

    def __init__(
        self, event: PrivacyEvent, delta: float, *, conversion: Conversion = "improved"
    ) -> None:
        accountant = RdpAccountant().compose(event)
        self.orders = accountant.orders
        self.curve = accountant.rdp
        self.delta = delta
        self.conversion: Conversion = conversion

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
            return rdp_to_epsilon(
                orders=self.orders, rdp=rdp, delta=self.delta, conversion=self.conversion
            )[0]

    def max_epochs(self, max_epsilon: float, *, limit: int) -> int:
        """The largest ``K <= limit`` whose epsilon is at most ``max_epsilon``."""
        return _largest_fitting(self, max_epsilon, limit)

    def describe(self) -> str:
        """How the epsilon is computed."""
        if self.conversion == "improved":
            return RDP_CONVERSION
        return "vfl's exact RDP, converted by Mironov 2017 (Proposition 3)"


class GaussianEpochBudget:
    """Epsilon of ``K`` epochs of Gaussian releases: dp-accounting's PLD accountant.

    Args:
        event: What one epoch releases of each sample (Gaussian releases, composed).
        delta: The delta of every epsilon.

    Raises:
        UnsupportedEventError: if ``event`` holds anything but Gaussian releases.
    """

    def __init__(self, event: PrivacyEvent, delta: float) -> None:
        flatten(event)
        self.event = event
        self.delta = delta

    def epsilon(self, epochs: int) -> float:
        """Epsilon at ``delta`` after ``epochs`` epochs (0 for none)."""
        releases, non_private = flatten(SelfComposedEvent(self.event, epochs))
        if non_private:
            return float("inf")
        return pld_epsilon(releases, self.delta)

    def rdp_epsilon(self, epochs: int) -> float:
        """The cross-check of ``epsilon``: dp-accounting's RDP accountant for the same releases."""
        releases, non_private = flatten(SelfComposedEvent(self.event, epochs))
        if non_private:
            return float("inf")
        return rdp_epsilon(releases, self.delta)

    def max_epochs(self, max_epsilon: float, *, limit: int) -> int:
        """The largest ``K <= limit`` whose epsilon is at most ``max_epsilon``."""
        return _largest_fitting(self, max_epsilon, limit)

    def describe(self) -> str:
        """How the epsilon is computed."""
        return describe()
