"""A party's own count of what it released of each training row, and the budget it enforces.

The server's accountant counts epochs: each shuffled epoch releases every training row once. A
deployed party that restarts (a fresh setup, or a restore at a round the server picks) trains
rounds again under a fresh noise key, so a row can leave it more often than the server counts,
and a party cannot take the server's word for how often. ``ReleaseGuard`` counts every
training release per row itself, has each one written down (its ``ReleaseJournal``) before the
counts leave the party, and refuses a release that would take a row past the party's own
``max_epsilon``. Its epsilon is the accountant's for ``K`` releases of one row through PBM, with
``K`` the most any row was released (``docs/privacy.md``, "Re-released rounds").
"""

from __future__ import annotations

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

    def append(self, rows: Rows) -> None:
        """Record one release of ``rows`` (durably, before the release leaves the party)."""
        ...


class NoJournal:
    """Keeps nothing: the counts live as long as the process (tests, simulations)."""

    def append(self, rows: Rows) -> None:
        """Nothing to write."""


@dataclass
class ReleaseGuard:
    """Counts a party's PBM releases of each training row and enforces its own budget.

    Attributes:
        uses: How often each training row was released (updated in place).
        journal: Written before each release leaves the party.
        delta: The delta of the party's epsilon.
        max_epsilon: The party's budget; 0 counts and reports without a limit.
        parties: The ``M`` to account with; 0 for every party of the secure sum (as the
            server's accountant), 1 to count only this party's own noise (the worst case, should
            the other parties collude with the server).
        last_event: The last admitted release (``None`` before any).
    """

    uses: Rows
    journal: ReleaseJournal = field(default_factory=NoJournal)
    delta: float = 1e-5
    max_epsilon: float = 0.0
    parties: int = 0
    last_event: PbmEvent | None = None
    _budgets: dict[PbmEvent, tuple[EpochBudget, int]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 < self.delta < 1.0:
            raise ConfigError(f"privacy delta must lie in (0, 1), got {self.delta}")
        if not self.max_epsilon >= 0.0:
            raise ConfigError(f"max_epsilon must be >= 0 (0: no limit), got {self.max_epsilon}")
        if self.parties < 0:
            raise ConfigError(f"parties must be >= 0 (0: every party), got {self.parties}")

    @property
    def most_uses(self) -> int:
        """The most often any training row was released."""
        return int(self.uses.max()) if len(self.uses) else 0

    def event(self, *, trials: int, beta: float, parties: int, dimension: int) -> PbmEvent:
        """One release of one row through PBM as this party accounts for it."""
        counted = self.parties or parties
        return PbmEvent(trials=trials, beta=beta, parties=counted, dimension=dimension)

    def epsilon(self, event: PbmEvent | None = None) -> float:
        """The party's epsilon at ``delta`` so far, for releases described by ``event``.

        Without ``event``, the last admitted release's (0 before any).
        """
        event = event or self.last_event
        return 0.0 if event is None else self._budget(event)[0].epsilon(self.most_uses)

    def admit(self, rows: Rows, event: PbmEvent) -> None:
        """Count one release of ``rows`` (journal first), or refuse it beyond the budget.

        Raises:
            ConfigError: if a row lies outside the party's training rows.
            PrivacyBudgetExhausted: if a row would be released more often than ``max_epsilon``
                allows; nothing is counted or written then.
        """
        if len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= len(self.uses)):
            raise ConfigError(
                f"released rows must lie in [0, {len(self.uses) - 1}], got"
                f" [{int(rows.min())}, {int(rows.max())}]"
            )
        positions, repeats = np.unique(rows, return_counts=True)
        after = int((self.uses[positions] + repeats).max()) if len(rows) else 0
        budget, allowed = self._budget(event)
        if self.max_epsilon and after > allowed:
            raise PrivacyBudgetExhausted(
                f"this release would take a row to {after} releases, epsilon"
                f" {budget.epsilon(after):.4g} at delta {self.delta:g}, beyond this party's"
                f" max_epsilon = {self.max_epsilon:g}, which allows {allowed} release(s) of a row"
            )
        self.journal.append(rows)
        self.uses[positions] += repeats
        self.last_event = event

    def _budget(self, event: PbmEvent) -> tuple[EpochBudget, int]:
        if event not in self._budgets:
            budget = EpochBudget(event, self.delta)
            allowed = (
                budget.max_epochs(self.max_epsilon, limit=_MOST_USES)
                if self.max_epsilon
                else _MOST_USES
            )
            self._budgets[event] = budget, allowed
        return self._budgets[event]
