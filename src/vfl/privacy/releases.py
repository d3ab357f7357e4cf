"""A party's own count of what it released of each training row, and the budget it enforces.

The server's accountant counts epochs: each shuffled epoch releases every training row once. A
deployed party that restarts (a fresh setup, or a restore at a round the server picks), or
whose server starts the run again, trains rounds again under fresh noise, so a row can leave it
more often than the server counts, and a party cannot take the server's word for how often.
``ReleaseGuard`` counts every training release per row itself, has each one written down (its
``ReleaseJournal``) before the counts leave the party, and refuses a release that would take a
row past the party's own ``max_epsilon``. Its epsilon is the accountant's for ``K`` releases of
one row, ``K`` the most any row was released, each release counted as the worst of the PBM
settings the party ever released under (``docs/privacy.md``, "Re-released rounds").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from vfl.errors import ConfigError, PrivacyBudgetExhausted
from vfl.privacy.budget import EpochBudget
from vfl.privacy.events import PbmEvent

Rows = npt.NDArray[np.int64]

_MOST_USES = 1 << 30
"""An upper end for the search of the largest number of uses a budget allows."""


class ReleaseJournal(Protocol):
    """Where a party writes down each release before it sends it (a file in a deployment)."""

    def append(self, rows: Rows, event: PbmEvent) -> None:
        """Record one release of ``rows`` under ``event`` (durably, before it leaves)."""
        ...


class NoJournal:
    """Keeps nothing: the counts live as long as the process (tests, simulations)."""

    def append(self, rows: Rows, event: PbmEvent) -> None:
        """Nothing to write."""


@dataclass
class ReleaseGuard:
    """Counts a party's PBM releases of each training row and enforces its own budget.

    Attributes:
        uses: How often each row was released (updated in place), indexed by ``row_map``'s
            values: in a deployment, the rows of the party's own training table.
        journal: Written before each release leaves the party.
        delta: The delta of the party's epsilon.
        max_epsilon: The party's budget; 0 counts and reports without a limit.
        parties: At most this many parties' noise is counted on (0: every party of the secure
            sum, as the server's accountant; 1: this party's own noise alone, the worst case,
            should the other parties collude with the server or be the server's own).
        events: Every PBM setting a release was made under, earlier ones (read back from the
            journal) included.
        row_map: The row of ``uses`` for each position of the party's training block (its
            alignment's own rows); ``None`` when they are the same.
        exact: How often each row was trained on without PBM (its embeddings left exact, so
            its epsilon, and the party's, is infinite); ``None`` for never.
    """

    uses: Rows
    journal: ReleaseJournal = field(default_factory=NoJournal)
    delta: float = 1e-5
    max_epsilon: float = 0.0
    parties: int = 0
    events: set[PbmEvent] = field(default_factory=set)
    row_map: Rows | None = None
    exact: Rows | None = None
    _budgets: dict[frozenset[PbmEvent], tuple[EpochBudget, int]] = field(
        default_factory=dict, repr=False
    )
    _most: int = field(default=0, repr=False)  # uses only grow: kept, not rescanned per release

    def __post_init__(self) -> None:
        if not 0.0 < self.delta < 1.0:
            raise ConfigError(f"privacy delta must lie in (0, 1), got {self.delta}")
        if not self.max_epsilon >= 0.0:
            raise ConfigError(f"max_epsilon must be >= 0 (0: no limit), got {self.max_epsilon}")
        if self.parties < 0:
            raise ConfigError(f"parties must be >= 0 (0: every party), got {self.parties}")
        self._most = int(self.uses.max()) if len(self.uses) else 0

    @property
    def most_uses(self) -> int:
        """The most often any row was released."""
        return self._most

    def event(self, *, trials: int, beta: float, parties: int, dimension: int) -> PbmEvent:
        """One release of one row through PBM with ``parties`` in the sum, as counted here."""
        counted = min(self.parties, parties) if self.parties else parties
        return PbmEvent(trials=trials, beta=beta, parties=counted, dimension=dimension)

    @property
    def exposed(self) -> bool:
        """Whether a row was ever trained on without PBM."""
        return self.exact is not None and bool(self.exact.any())

    def epsilon(self) -> float:
        """The party's epsilon at ``delta`` so far (0 before any release, infinite if exposed)."""
        if self.exposed:
            return math.inf
        if not self.events:
            return 0.0
        return self._budget(frozenset(self.events))[0].epsilon(self.most_uses)

    def admit(self, positions: Rows, event: PbmEvent) -> None:
        """Count one release of the training block's ``positions`` (journal first), or refuse it.

        Raises:
            ConfigError: if a position lies outside the party's training block.
            PrivacyBudgetExhausted: if a row would be released more often than ``max_epsilon``
                allows, or the table was trained on without PBM; nothing is counted or
                written then.
        """
        size = len(self.uses) if self.row_map is None else len(self.row_map)
        if len(positions) and (int(positions.min()) < 0 or int(positions.max()) >= size):
            raise ConfigError(
                f"released rows must lie in this party's training rows [0, {size - 1}], got"
                f" [{int(positions.min())}, {int(positions.max())}]"
            )
        rows = positions if self.row_map is None else self.row_map[positions]
        unique, repeats = np.unique(rows, return_counts=True)
        # The most releases of any row afterwards: the party's epsilon then stays within the
        # budget even when a new setting raises every earlier release's cost.
        after = max(int((self.uses[unique] + repeats).max()) if len(rows) else 0, self.most_uses)
        budget, allowed = self._budget(frozenset(self.events | {event}))
        if self.max_epsilon and self.exposed:
            raise PrivacyBudgetExhausted(
                f"this party's max_epsilon = {self.max_epsilon:g} is spent: rows of its table"
                " were trained on in a run without PBM, which sent their embeddings exact"
                " (epsilon infinite)"
            )
        if self.max_epsilon and after > allowed:
            raise PrivacyBudgetExhausted(
                f"after this release a row would have left {after} times, epsilon"
                f" {budget.epsilon(after):.4g} at delta {self.delta:g}, beyond this party's"
                f" max_epsilon = {self.max_epsilon:g}, which allows {allowed} release(s) of a row"
            )
        self.journal.append(rows, event)
        self.uses[unique] += repeats
        self._most = max(self._most, int(self.uses[unique].max()) if len(unique) else 0)
        self.events.add(event)

    def _budget(self, events: frozenset[PbmEvent]) -> tuple[EpochBudget, int]:
        if events not in self._budgets:
            budget = EpochBudget.worst_of(events, self.delta)
            allowed = (
                budget.max_epochs(self.max_epsilon, limit=_MOST_USES)
                if self.max_epsilon
                else _MOST_USES
            )
            self._budgets[events] = budget, allowed
        return self._budgets[events]
