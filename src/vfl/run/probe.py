"""A probe: something that watches a simulated run through ``Taps`` and reports per epoch.

``vfl.attacks`` implements it (an attack on one role, and the scoring of the attack against the
truth); the run only composes its taps, gives it the built session and the data, asks it for
metrics at the end of each epoch (they join that epoch's ``metrics.jsonl`` record), keeps its
state in every checkpoint, and lets it add to ``summary.json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from vfl.data.vertical import VerticalData
from vfl.run.observe import Taps

if TYPE_CHECKING:
    from vfl.run.session import LocalParties, Session


class Probe(Protocol):
    """Watches one simulated run."""

    def taps(self) -> Taps:
        """The roles to observe, and who listens to each."""
        ...

    def attach(self, session: Session[LocalParties], data: VerticalData) -> None:
        """The composed run (built with ``taps()``) and its data, before training starts."""
        ...

    def epoch_metrics(self, epoch: int) -> dict[str, float]:
        """Metrics at the end of epoch ``epoch`` (0-based), for that epoch's record."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """What a resumed run needs to go on as an uninterrupted one would."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict()``."""
        ...

    def summarize(self, summary: dict[str, Any]) -> None:
        """Add the probe's section to a finished run's summary."""
        ...
