"""PBM's reported epsilon: its RDP converted by Balle et al. 2020 / Canonne, Kamath and Steinke
2020 (Proposition 12), checked against independent computations:

- the exact privacy profile of the composed worst-case pair, by direct summation over its
  finite support (numpy and scipy only): the converted epsilon must bound it from above (a
  conversion that claimed less would be wrong), and not be far from it;
- the Rényi divergence of the composed pair, summed directly over the composed support,
  against the accountant's composed curve;
- dp-accounting's own conversion function (``compute_epsilon``) on the same curve.

With the other parties at +C (the worst case vfl's accountant finds and certifies), one
coordinate's release is the pair ``P± = Bin(b, 1/2 ± β) * Bin((M−1) b, 1/2 + β)``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import binom

from vfl.privacy.analysis import rdp_to_epsilon
from vfl.privacy.budget import EpochBudget
from vfl.privacy.events import PbmEvent

DELTA = 1e-5


def _pair(trials: int, beta: float, parties: int) -> tuple[np.ndarray, np.ndarray]:
    """The laws of one coordinate's sum when the changed party sits at +C and at −C."""
    others = binom.pmf(np.arange((parties - 1) * trials + 1), (parties - 1) * trials, 0.5 + beta)
    own = np.arange(trials + 1)
    plus = np.convolve(binom.pmf(own, trials, 0.5 + beta), others)
    minus = np.convolve(binom.pmf(own, trials, 0.5 - beta), others)
    return plus, minus


def _composed_losses(
    trials: int, beta: float, parties: int, uses: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every outcome of ``uses`` independent releases: its log-probability under P₊ and P₋."""
    plus, minus = _pair(trials, beta, parties)
    outcomes = np.array(list(itertools.product(range(len(plus)), repeat=uses)))
    log_plus = np.log(plus)[outcomes].sum(axis=1)
    log_minus = np.log(minus)[outcomes].sum(axis=1)
    return log_plus, log_minus


def _exact_epsilon(log_p: np.ndarray, log_q: np.ndarray, delta: float) -> float:
    """The smallest ε with ``Σ max(0, P − e^ε Q) <= δ`` in both directions (hockey stick)."""

    def delta_of(eps: float) -> float:
        forward = np.exp(log_p) * -np.expm1(np.minimum(eps + log_q - log_p, 0.0))
        backward = np.exp(log_q) * -np.expm1(np.minimum(eps + log_p - log_q, 0.0))
        return float(max(forward.sum(), backward.sum()))

    low, high = 0.0, 1.0
    while delta_of(high) > delta:
        high *= 2
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if delta_of(middle) > delta else (low, middle)
    return high


def _binomial_epsilon(trials: int, beta: float, uses: int, delta: float) -> float:
    """The exact profile for M = 1, any number of uses: the loss is linear in the total count,
    which is ``Bin(uses·b, 1/2 ± β)``."""
    total = np.arange(uses * trials + 1)
    log_p = binom.logpmf(total, uses * trials, 0.5 + beta)
    log_q = binom.logpmf(total, uses * trials, 0.5 - beta)
    return _exact_epsilon(log_p, log_q, delta)


CASES = [(4, 0.05, 2, 1), (4, 0.25, 2, 2), (2, 0.15, 3, 3), (8, 0.05, 2, 2), (1, 0.25, 4, 4)]


@pytest.mark.parametrize(("trials", "beta", "parties", "uses"), CASES)
def test_the_converted_epsilon_bounds_the_exact_privacy_profile(
    trials: int, beta: float, parties: int, uses: int
) -> None:
    # Prepare: the exact epsilon of the composed worst-case pair, by direct summation
    exact = _exact_epsilon(*_composed_losses(trials, beta, parties, uses), DELTA)
    event = PbmEvent(trials=trials, beta=beta, parties=parties, dimension=1)

    # Execute
    improved = EpochBudget(event, DELTA).epsilon(uses)
    mironov = EpochBudget(event, DELTA, conversion="mironov").epsilon(uses)

    # Assert: a bound (never below the exact figure), tighter than Mironov's, and not loose
    assert exact <= improved <= mironov
    assert improved <= 3.0 * exact + 1.0


@pytest.mark.parametrize(
    ("trials", "beta", "uses"), [(4, 0.05, 10), (16, 0.25, 40), (64, 0.05, 600)]
)
def test_the_converted_epsilon_bounds_the_exact_profile_of_one_party_over_many_uses(
    trials: int, beta: float, uses: int
) -> None:
    # Prepare: M = 1 (counts in the clear, or the coalition figure), as many uses as a training
    exact = _binomial_epsilon(trials, beta, uses, DELTA)
    event = PbmEvent(trials=trials, beta=beta, parties=1, dimension=1)

    # Execute
    improved = EpochBudget(event, DELTA).epsilon(uses)

    # Assert
    assert exact <= improved <= 1.5 * exact + 1.0


def test_a_conversion_that_forgot_delta_would_claim_less_than_the_exact_profile() -> None:
    # Prepare: the negative control: the smallest composed RDP over the orders, as if it were
    # epsilon (the conversion's log(1/δ)/(α − 1) term left out) is below the exact figure, so
    # the check above can fail
    trials, beta, parties, uses = 4, 0.25, 2, 2
    exact = _exact_epsilon(*_composed_losses(trials, beta, parties, uses), DELTA)
    budget = EpochBudget(PbmEvent(trials=trials, beta=beta, parties=parties, dimension=1), DELTA)

    # Execute
    forgetful = float(np.min(uses * budget.curve))

    # Assert
    assert forgetful < exact


@pytest.mark.parametrize("order", [2.0, 2.5, 8.0, 32.0])
def test_the_composed_curve_is_the_renyi_divergence_summed_over_the_composed_support(
    order: float,
) -> None:
    # Prepare: three releases of one coordinate, M = 2, b = 4
    trials, beta, parties, uses = 4, 0.15, 2, 3
    log_p, log_q = _composed_losses(trials, beta, parties, uses)
    budget = EpochBudget(PbmEvent(trials=trials, beta=beta, parties=parties, dimension=1), DELTA)

    # Execute: D_α(P₊‖P₋) of the composed laws, directly (the mirror direction is equal)
    direct = float(logsumexp(order * log_p + (1 - order) * log_q)) / (order - 1)

    # Assert
    index = budget.orders.index(order)
    assert uses * budget.curve[index] == pytest.approx(direct, rel=1e-9)


def test_the_conversion_is_dp_accounting_s_on_the_same_curve() -> None:
    # Prepare: a composed PBM curve on vfl's finite orders above 1.01 (where dp-accounting's
    # conversion applies it)
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    budget = EpochBudget(PbmEvent(trials=16, beta=0.05, parties=4, dimension=16), DELTA)
    keep = [i for i, a in enumerate(budget.orders) if 1.01 < a < math.inf]
    orders = [budget.orders[i] for i in keep]
    for epochs in (1, 10, 600):
        rdp = [epochs * float(budget.curve[i]) for i in keep]

        # Execute
        ours, _ = rdp_to_epsilon(orders=orders, rdp=rdp, delta=DELTA, conversion="improved")
        theirs, _ = compute_epsilon(orders, rdp, DELTA)

        # Assert
        assert ours == pytest.approx(float(theirs), rel=1e-12)
