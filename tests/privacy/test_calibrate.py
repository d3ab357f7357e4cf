"""Calibration: the largest b or beta that meets a target epsilon."""

from __future__ import annotations

import pytest

from vfl.errors import ConfigError
from vfl.privacy import PbmEvent, RdpAccountant, SelfComposedEvent, calibrate


def epsilon(trials: int, beta: float) -> float:
    event = SelfComposedEvent(PbmEvent(trials=trials, beta=beta, parties=4, dimension=2), 10)
    return RdpAccountant().compose(event).get_epsilon(1e-5)


def test_calibrated_trials_are_the_largest_that_meet_the_target() -> None:
    # Execute
    trials = calibrate(
        RdpAccountant,
        lambda b: SelfComposedEvent(PbmEvent(int(b), 0.05, 4, 2), 10),
        target_epsilon=10.0,
        delta=1e-5,
        bracket=(1, 256),
        discrete=True,
    )

    # Assert
    assert isinstance(trials, int)
    assert epsilon(trials, 0.05) <= 10.0 < epsilon(trials + 1, 0.05)


def test_calibrated_beta_meets_the_target_within_the_tolerance() -> None:
    # Execute
    beta = calibrate(
        RdpAccountant,
        lambda bt: SelfComposedEvent(PbmEvent(16, bt, 4, 2), 10),
        target_epsilon=5.0,
        delta=1e-5,
        bracket=(1e-3, 0.25),
        tol=1e-5,
    )

    # Assert
    assert epsilon(16, beta) <= 5.0 < epsilon(16, beta + 2e-5)


def test_a_reachable_upper_end_is_returned_and_an_unreachable_lower_end_refused() -> None:
    def event(b: float) -> SelfComposedEvent:
        return SelfComposedEvent(PbmEvent(int(b), 0.05, 4, 2), 10)

    assert calibrate(RdpAccountant, event, target_epsilon=1e6, delta=1e-5, bracket=(1, 8)) == 8
    with pytest.raises(ConfigError, match="even the lower end 1 of the bracket gives epsilon"):
        calibrate(RdpAccountant, event, target_epsilon=0.1, delta=1e-5, bracket=(1, 8))
    with pytest.raises(ConfigError, match=r"bracket must be finite with low < high, got \(8, 1\)"):
        calibrate(RdpAccountant, event, target_epsilon=1.0, delta=1e-5, bracket=(8, 1))
