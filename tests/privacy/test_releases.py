"""A party's own count of its PBM releases per training row, and the budget it enforces."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vfl.errors import ConfigError, PrivacyBudgetExhausted
from vfl.privacy.budget import EpochBudget
from vfl.privacy.events import PbmEvent
from vfl.privacy.releases import ReleaseGuard, Rows

EVENT = PbmEvent(trials=16, beta=0.05, parties=4, dimension=2)
DELTA = 1e-5


class ListJournal:
    """Remembers every release it was given, in order."""

    def __init__(self) -> None:
        self.releases: list[list[int]] = []

    def append(self, rows: Rows) -> None:
        self.releases.append(rows.tolist())


class FailingJournal:
    def append(self, rows: Rows) -> None:
        raise OSError("disk full")


def guard(
    rows: int, *, max_epsilon: float = 0.0, parties: int = 0
) -> tuple[ReleaseGuard, ListJournal]:
    journal = ListJournal()
    uses = np.zeros(rows, dtype=np.int64)
    return ReleaseGuard(uses, journal, DELTA, max_epsilon, parties), journal


@given(st.lists(st.lists(st.integers(0, 9), max_size=6), max_size=8))
def test_the_guard_counts_every_release_of_every_row_and_journals_it_in_order(
    batches: list[list[int]],
) -> None:
    # Prepare
    counter, journal = guard(10)

    # Execute
    for batch in batches:
        counter.admit(np.array(batch, dtype=np.int64), EVENT)

    # Assert
    expected = Counter(row for batch in batches for row in batch)
    assert counter.uses.tolist() == [expected[row] for row in range(10)]
    assert journal.releases == batches
    assert counter.most_uses == max(expected.values(), default=0)


def test_epsilon_is_the_accountants_for_the_most_releases_of_one_row() -> None:
    # Prepare
    counter, _ = guard(4)
    for batch in ([0, 1], [1, 2], [1]):
        counter.admit(np.array(batch, dtype=np.int64), EVENT)

    # Execute
    spent = counter.epsilon()

    # Assert: row 1 was released three times
    assert spent == EpochBudget(EVENT, DELTA).epsilon(3)
    assert 0 < EpochBudget(EVENT, DELTA).epsilon(2) < spent


def test_a_release_beyond_the_budget_is_refused_and_nothing_is_counted_or_written() -> None:
    # Prepare: a budget that fits two releases of a row, not three
    budget = EpochBudget(EVENT, DELTA)
    limit = (budget.epsilon(2) + budget.epsilon(3)) / 2
    counter, journal = guard(4, max_epsilon=limit)
    counter.admit(np.array([0, 1], dtype=np.int64), EVENT)
    counter.admit(np.array([0, 2], dtype=np.int64), EVENT)

    # Execute / Assert
    with pytest.raises(PrivacyBudgetExhausted) as caught:
        counter.admit(np.array([3, 0], dtype=np.int64), EVENT)
    assert str(caught.value) == (
        f"this release would take a row to 3 releases, epsilon {budget.epsilon(3):.4g} at delta"
        f" 1e-05, beyond this party's max_epsilon = {limit:g}, which allows 2 release(s) of a"
        " row"
    )
    assert counter.uses.tolist() == [2, 1, 1, 0]
    assert len(journal.releases) == 2
    # Assert: the control: rows still within the budget are released
    counter.admit(np.array([3, 1], dtype=np.int64), EVENT)
    assert counter.uses.tolist() == [2, 2, 1, 1]


def test_a_row_twice_in_one_release_counts_twice_against_the_budget() -> None:
    # Prepare
    budget = EpochBudget(EVENT, DELTA)
    counter, _ = guard(2, max_epsilon=(budget.epsilon(1) + budget.epsilon(2)) / 2)

    # Execute / Assert
    with pytest.raises(PrivacyBudgetExhausted, match="take a row to 2 releases"):
        counter.admit(np.array([1, 1], dtype=np.int64), EVENT)
    counter.admit(np.array([0, 1], dtype=np.int64), EVENT)  # the control
    assert counter.uses.tolist() == [1, 1]


def test_a_release_is_counted_only_once_the_journal_holds_it() -> None:
    # Prepare
    counter = ReleaseGuard(np.zeros(3, dtype=np.int64), FailingJournal())

    # Execute / Assert
    with pytest.raises(OSError, match="disk full"):
        counter.admit(np.array([0, 2], dtype=np.int64), EVENT)
    assert counter.uses.tolist() == [0, 0, 0]


def test_the_party_may_count_on_its_own_noise_alone() -> None:
    # Prepare
    everyone, _ = guard(2)
    alone, _ = guard(2, parties=1)

    # Execute
    events = [g.event(trials=16, beta=0.05, parties=4, dimension=2) for g in (everyone, alone)]

    # Assert
    assert [e.parties for e in events] == [4, 1]
    for g, event in zip((everyone, alone), events, strict=True):
        g.admit(np.array([0], dtype=np.int64), event)
    assert alone.epsilon() > everyone.epsilon() > 0


def test_rows_outside_the_training_rows_are_refused() -> None:
    # Prepare
    counter, journal = guard(3)

    # Execute / Assert
    with pytest.raises(ConfigError, match=r"released rows must lie in \[0, 2\], got \[1, 3\]"):
        counter.admit(np.array([1, 3], dtype=np.int64), EVENT)
    assert journal.releases == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"delta": 0.0}, "privacy delta must lie in (0, 1), got 0.0"),
        ({"max_epsilon": -1.0}, "max_epsilon must be >= 0 (0: no limit), got -1.0"),
        ({"parties": -1}, "parties must be >= 0 (0: every party), got -1"),
    ],
)
def test_invalid_guard_settings_are_refused(options: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ReleaseGuard(np.zeros(1, dtype=np.int64), **options)  # type: ignore[arg-type]
    assert str(caught.value) == message
