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
NOISIER = PbmEvent(trials=4, beta=0.01, parties=4, dimension=2)
DELTA = 1e-5


class ListJournal:
    """Remembers every release it was given, in order."""

    def __init__(self) -> None:
        self.releases: list[tuple[list[int], PbmEvent]] = []

    def append(self, rows: Rows, event: PbmEvent) -> None:
        self.releases.append((rows.tolist(), event))


class FailingJournal:
    def append(self, rows: Rows, event: PbmEvent) -> None:
        raise OSError("disk full")


def guard(
    rows: int, *, max_epsilon: float = 0.0, parties: int = 0, row_map: Rows | None = None
) -> tuple[ReleaseGuard, ListJournal]:
    journal = ListJournal()
    uses = np.zeros(rows, dtype=np.int64)
    counter = ReleaseGuard(uses, journal, DELTA, max_epsilon, parties, row_map=row_map)
    return counter, journal


def between(budget: EpochBudget, fits: int) -> float:
    """A max_epsilon that lets ``fits`` releases of a row through, not one more."""
    return (budget.epsilon(fits) + budget.epsilon(fits + 1)) / 2


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
    assert journal.releases == [(batch, EVENT) for batch in batches]
    assert counter.most_uses == max(expected.values(), default=0)


def test_block_positions_are_counted_as_the_rows_of_the_table_they_map_to() -> None:
    # Prepare: a block of 3 rows drawn from a table of 5
    counter, journal = guard(5, row_map=np.array([4, 0, 2], dtype=np.int64))

    # Execute
    counter.admit(np.array([0, 1], dtype=np.int64), EVENT)
    counter.admit(np.array([0, 2], dtype=np.int64), EVENT)

    # Assert
    assert counter.uses.tolist() == [1, 0, 1, 0, 2]
    assert [rows for rows, _ in journal.releases] == [[4, 0], [4, 2]]


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
    assert guard(4)[0].epsilon() == 0.0  # the control: nothing released, nothing spent


def test_releases_under_several_settings_each_count_as_the_worst_of_them() -> None:
    # Prepare
    counter, _ = guard(2)
    counter.admit(np.array([0], dtype=np.int64), NOISIER)
    counter.admit(np.array([0], dtype=np.int64), EVENT)

    # Execute
    spent = counter.epsilon()

    # Assert
    assert spent == EpochBudget.worst_of([EVENT, NOISIER], DELTA).epsilon(2)
    assert spent >= EpochBudget(EVENT, DELTA).epsilon(2) > EpochBudget(NOISIER, DELTA).epsilon(2)


def test_a_release_beyond_the_budget_is_refused_and_nothing_is_counted_or_written() -> None:
    # Prepare: a budget that fits two releases of a row, not three
    budget = EpochBudget(EVENT, DELTA)
    limit = between(budget, 2)
    counter, journal = guard(4, max_epsilon=limit)
    counter.admit(np.array([0, 1], dtype=np.int64), EVENT)
    counter.admit(np.array([0, 2], dtype=np.int64), EVENT)

    # Execute / Assert
    with pytest.raises(PrivacyBudgetExhausted) as caught:
        counter.admit(np.array([3, 0], dtype=np.int64), EVENT)
    assert str(caught.value) == (
        f"after this release a row would have left 3 times, epsilon {budget.epsilon(3):.4g} at"
        f" delta 1e-05, beyond this party's max_epsilon = {limit:g}, which allows 2 release(s)"
        " of a row"
    )
    assert counter.uses.tolist() == [2, 1, 1, 0]
    assert len(journal.releases) == 2
    # Assert: the control: rows still within the budget are released
    counter.admit(np.array([3, 1], dtype=np.int64), EVENT)
    assert counter.uses.tolist() == [2, 2, 1, 1]


def test_a_setting_with_less_noise_spends_the_budget_sooner() -> None:
    # Prepare: a budget that fits three releases under the noisier setting
    counter, _ = guard(1, max_epsilon=between(EpochBudget(NOISIER, DELTA), 3))
    for _ in range(2):
        counter.admit(np.array([0], dtype=np.int64), NOISIER)

    # Execute / Assert: a third release with less noise is counted as the worse of the two
    assert EpochBudget(EVENT, DELTA).epsilon(3) > counter.max_epsilon
    with pytest.raises(PrivacyBudgetExhausted):
        counter.admit(np.array([0], dtype=np.int64), EVENT)
    counter.admit(np.array([0], dtype=np.int64), NOISIER)  # the control
    assert counter.uses.tolist() == [3]


def test_a_row_twice_in_one_release_counts_twice_against_the_budget() -> None:
    # Prepare
    counter, _ = guard(2, max_epsilon=between(EpochBudget(EVENT, DELTA), 1))

    # Execute / Assert
    with pytest.raises(PrivacyBudgetExhausted, match="a row would have left 2 times"):
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
    assert counter.events == set()


@pytest.mark.parametrize(
    ("setting", "in_the_sum", "counted"),
    [(0, 4, 4), (1, 4, 1), (2, 4, 2), (5, 4, 4), (5, 1, 1), (0, 1, 1)],
)
def test_the_party_counts_on_at_most_its_setting_of_parties_noise(
    setting: int, in_the_sum: int, counted: int
) -> None:
    # Prepare
    counter, _ = guard(1, parties=setting)

    # Execute
    event = counter.event(trials=16, beta=0.05, parties=in_the_sum, dimension=2)

    # Assert
    assert event == PbmEvent(trials=16, beta=0.05, parties=counted, dimension=2)


def test_rows_outside_the_training_block_are_refused() -> None:
    # Prepare
    counter, journal = guard(3)

    # Execute / Assert
    with pytest.raises(ConfigError) as caught:
        counter.admit(np.array([1, 3], dtype=np.int64), EVENT)
    assert str(caught.value) == (
        "released rows must lie in this party's training rows [0, 2], got [1, 3]"
    )
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


def test_the_worst_of_no_events_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one event"):
        EpochBudget.worst_of([], DELTA)


def test_rows_trained_on_without_pbm_make_epsilon_infinite_and_spend_any_budget() -> None:
    # Prepare
    exact = np.array([0, 1, 0], dtype=np.int64)
    counting = ReleaseGuard(np.zeros(3, dtype=np.int64), exact=exact)
    limited = ReleaseGuard(np.zeros(3, dtype=np.int64), max_epsilon=100.0, exact=exact)

    # Execute
    counting.admit(np.array([0], dtype=np.int64), EVENT)

    # Assert
    assert counting.exposed and counting.epsilon() == float("inf")
    with pytest.raises(PrivacyBudgetExhausted, match="trained on in a run without PBM"):
        limited.admit(np.array([0], dtype=np.int64), EVENT)
    unexposed = ReleaseGuard(np.zeros(3, dtype=np.int64), exact=np.zeros(3, dtype=np.int64))
    assert not unexposed.exposed  # the control
