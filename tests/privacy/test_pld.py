"""The Gaussian label noise's epsilon is dp-accounting's PLD epsilon for the same events; the PLD
epsilon is checked against the exact epsilon of the Gaussian composition (Balle and Wang 2018),
and dp-accounting's RDP epsilon, the cross-check, is never below it."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import log_ndtr

from vfl.errors import ConfigError
from vfl.privacy.accountant import UnsupportedEventError
from vfl.privacy.budget import GaussianEpochBudget, epoch_budget
from vfl.privacy.events import (
    ComposedEvent,
    GaussianEvent,
    NonPrivateEvent,
    NoOpEvent,
    PbmEvent,
    SelfComposedEvent,
)
from vfl.privacy.pld import PldAccountant, discretization

DELTA = 1e-5


def _dp_accounting_epsilon(multiplier: float, rows: int, epochs: int) -> float:
    """dp-accounting's PLD accountant, told the same events in its own terms: ``epochs`` times
    ``rows`` Gaussian releases of noise z C and sensitivity 2 C (its noise multiplier z / 2)."""
    from dp_accounting import GaussianDpEvent, SelfComposedDpEvent
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

    interval = discretization(((multiplier, 2.0, rows * epochs),))
    accountant = PLDAccountant(value_discretization_interval=interval)
    accountant.compose(SelfComposedDpEvent(GaussianDpEvent(multiplier / 2.0), rows), epochs)
    return float(accountant.get_epsilon(DELTA))


def _exact_epsilon(mu: float, delta: float) -> float:
    """The exact epsilon of a mu-GDP mechanism: ``δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)``
    (Balle and Wang 2018, Theorem 8), in log space, solved by bisection; ``K`` Gaussian releases
    of ratio ``s/z`` compose exactly to one of ratio ``√K s/z``."""

    def delta_of(eps: float) -> float:
        first = float(log_ndtr(-eps / mu + mu / 2))
        second = eps + float(log_ndtr(-eps / mu - mu / 2))
        return math.exp(first) * -math.expm1(second - first) if second < first else 0.0

    low, high = 0.0, 1.0
    while delta_of(high) > delta:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if delta_of(middle) > delta else (low, middle)
    return high


@settings(max_examples=25, deadline=None)
@given(multiplier=st.floats(0.05, 30.0), rows=st.integers(1, 4), epochs=st.integers(1, 60))
def test_the_gaussian_epsilon_equals_dp_accounting_s_pld_epsilon_for_the_same_events(
    multiplier: float, rows: int, epochs: int
) -> None:
    # Prepare
    expected = _dp_accounting_epsilon(multiplier, rows, epochs)
    per_epoch = SelfComposedEvent(GaussianEvent(multiplier, sensitivity=2.0), rows)

    # Execute
    reported = GaussianEpochBudget(per_epoch, DELTA).epsilon(epochs)

    # Assert
    assert reported == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize(
    ("multiplier", "releases"),
    [(50.0, 1), (20.0, 100), (8.0, 30), (2.0, 4), (1.0, 3), (1.0, 9), (0.5, 4), (4.0, 1000)],
)
def test_the_pld_epsilon_bounds_the_exact_one_closely_and_rdp_stays_above_it(
    multiplier: float, releases: int
) -> None:
    # Prepare
    exact = _exact_epsilon(math.sqrt(releases) * 2.0 / multiplier, DELTA)
    budget = GaussianEpochBudget(GaussianEvent(multiplier, sensitivity=2.0), DELTA)

    # Execute
    pld, rdp = budget.epsilon(releases), budget.rdp_epsilon(releases)

    # Assert: an upper bound (pessimistic discretization), within 1e-4 (relative) of the exact
    # epsilon, or 2e-5 absolute for small ones; RDP looser
    assert exact <= pld <= exact * (1 + 1e-4) + 2e-5
    assert rdp >= pld


def test_at_large_noise_ratios_the_pld_epsilon_stays_within_a_thousandth_of_the_exact_one() -> None:
    # Prepare: mu = 40 and 400, where dp-accounting's Gaussian PLD is a little looser
    for multiplier, releases in ((0.1, 4), (0.01, 4)):
        exact = _exact_epsilon(math.sqrt(releases) * 2.0 / multiplier, DELTA)

        # Execute
        pld = GaussianEpochBudget(GaussianEvent(multiplier), DELTA).epsilon(releases)

        # Assert
        assert exact <= pld <= exact * 1.001


def test_the_pld_accountant_composes_and_keeps_its_state() -> None:
    # Prepare
    release = GaussianEvent(1.5, sensitivity=2.0)
    accountant = PldAccountant().compose(release, 3).compose(SelfComposedEvent(release, 2))
    accountant.compose(ComposedEvent((release, NoOpEvent())))

    # Execute
    restored = PldAccountant()
    restored.load_state_dict(accountant.state_dict())

    # Assert
    assert accountant.releases == ((1.5, 2.0, 6),)
    assert restored.get_epsilon(DELTA) == accountant.get_epsilon(DELTA)
    assert accountant.get_epsilon(DELTA) == pytest.approx(_dp_accounting_epsilon(1.5, 6, 1))
    assert accountant.get_rdp_epsilon(DELTA) >= accountant.get_epsilon(DELTA)


def test_no_release_is_zero_and_a_non_private_one_infinite() -> None:
    assert PldAccountant().get_epsilon(DELTA) == 0.0
    assert PldAccountant().compose(NoOpEvent(), 5).get_epsilon(DELTA) == 0.0
    assert PldAccountant().compose(NonPrivateEvent()).get_epsilon(DELTA) == math.inf
    assert PldAccountant().compose(NonPrivateEvent(), 0).get_epsilon(DELTA) == 0.0


def test_what_the_pld_accountant_cannot_compose_is_refused() -> None:
    pbm = PbmEvent(trials=4, beta=0.05, parties=2, dimension=1)
    assert not PldAccountant().supports(pbm)
    with pytest.raises(UnsupportedEventError, match="PldAccountant cannot compose"):
        PldAccountant().compose(ComposedEvent((GaussianEvent(1.0), pbm)))
    with pytest.raises(ConfigError, match="count must be an integer >= 0"):
        PldAccountant().compose(GaussianEvent(1.0), -1)
    with pytest.raises(ConfigError, match="PLD release must be"):
        PldAccountant().load_state_dict({"releases": [[1.0, 2.0]], "non_private": False})


def test_a_budget_picks_pld_for_gaussian_releases_and_rdp_for_pbm() -> None:
    gaussian = epoch_budget(SelfComposedEvent(GaussianEvent(1.0), 2), DELTA)
    pbm = epoch_budget(PbmEvent(trials=4, beta=0.05, parties=2, dimension=1), DELTA)
    assert "PLD accountant of dp-accounting" in gaussian.describe()
    assert "Canonne, Kamath and Steinke" in pbm.describe()
    assert gaussian.max_epochs(gaussian.epsilon(3), limit=10) == 3
