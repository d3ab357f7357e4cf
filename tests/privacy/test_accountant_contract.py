"""The contract every accountant meets; add new accountants (or settings) to ACCOUNTANTS."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from vfl.errors import ConfigError
from vfl.privacy import (
    Accountant,
    ComposedEvent,
    NonPrivateEvent,
    NoOpEvent,
    PbmEvent,
    PrivacyEvent,
    RdpAccountant,
    SelfComposedEvent,
    UnsupportedEventError,
)

ACCOUNTANTS: dict[str, Callable[[], Accountant]] = {
    "rdp-mironov": RdpAccountant,
    "rdp-improved": lambda: RdpAccountant(conversion="improved"),
    "rdp-coarse-orders": lambda: RdpAccountant(orders=[1.25, 1.5, 2.0, 4.0, 8.0, 16.0, 64.0]),
}
RELEASE = PbmEvent(trials=16, beta=0.05, parties=4, dimension=8)
DELTA = 1e-5


@dataclass(frozen=True)
class MadeUpEvent(PrivacyEvent):
    """An event no accountant knows."""


@pytest.fixture(params=sorted(ACCOUNTANTS))
def make(request: pytest.FixtureRequest) -> Callable[[], Accountant]:
    return ACCOUNTANTS[request.param]


def epsilon_of(make: Callable[[], Accountant], *events: PrivacyEvent) -> float:
    accountant = make()
    for event in events:
        accountant.compose(event)
    return accountant.get_epsilon(DELTA)


def test_no_events_and_no_op_events_give_zero_epsilon(make: Callable[[], Accountant]) -> None:
    assert make().get_epsilon(DELTA) == 0.0
    assert epsilon_of(make, NoOpEvent(), SelfComposedEvent(NoOpEvent(), 5)) == 0.0
    assert epsilon_of(make, SelfComposedEvent(RELEASE, 0)) == 0.0


def test_non_private_events_give_infinite_epsilon(make: Callable[[], Accountant]) -> None:
    assert epsilon_of(make, RELEASE, NonPrivateEvent()) == math.inf
    assert epsilon_of(make, SelfComposedEvent(NonPrivateEvent(), 0)) == 0.0


def test_unsupported_events_are_refused_even_when_nested(make: Callable[[], Accountant]) -> None:
    # Prepare
    nested = ComposedEvent((RELEASE, SelfComposedEvent(MadeUpEvent(), 3)))
    accountant = make()

    # Execute / Assert
    assert accountant.supports(RELEASE)
    assert not accountant.supports(MadeUpEvent())
    assert not accountant.supports(nested)
    with pytest.raises(UnsupportedEventError, match="MadeUpEvent"):
        accountant.compose(nested)
    assert accountant.get_epsilon(DELTA) == 0.0


def test_compose_returns_the_accountant_for_chaining(make: Callable[[], Accountant]) -> None:
    accountant = make()
    assert accountant.compose(RELEASE) is accountant


def test_counting_self_composition_and_repetition_agree(make: Callable[[], Accountant]) -> None:
    # Execute
    repeated = epsilon_of(make, *([RELEASE] * 5))
    counted = make().compose(RELEASE, count=5).get_epsilon(DELTA)
    self_composed = epsilon_of(make, SelfComposedEvent(RELEASE, 5))
    composed = epsilon_of(make, ComposedEvent((RELEASE,) * 5))

    # Assert
    assert counted == pytest.approx(repeated, rel=1e-12)
    assert self_composed == pytest.approx(repeated, rel=1e-12)
    assert composed == pytest.approx(repeated, rel=1e-12)


def test_epsilon_grows_with_releases_and_shrinks_with_delta(
    make: Callable[[], Accountant],
) -> None:
    # Execute
    values = [make().compose(RELEASE, count=n).get_epsilon(DELTA) for n in (1, 2, 10, 100)]
    loose = make().compose(RELEASE, count=10).get_epsilon(1e-2)

    # Assert
    assert all(a < b for a, b in itertools.pairwise(values))
    assert 0 < loose < values[2]


def test_state_dict_is_plain_and_restores_the_same_answer(make: Callable[[], Accountant]) -> None:
    # Prepare
    accountant = make().compose(RELEASE, count=7)

    # Execute
    state = json.loads(json.dumps(accountant.state_dict()))
    restored = make()
    restored.load_state_dict(state)
    restored.compose(RELEASE, count=3)

    # Assert
    assert restored.get_epsilon(DELTA) == pytest.approx(
        make().compose(RELEASE, count=10).get_epsilon(DELTA), rel=1e-12
    )


def test_bad_counts_and_states_are_config_errors(make: Callable[[], Accountant]) -> None:
    accountant = make()
    with pytest.raises(ConfigError, match="count must be an integer >= 0, got -1"):
        accountant.compose(RELEASE, count=-1)
    with pytest.raises(ConfigError, match="lacks"):
        accountant.load_state_dict({})
