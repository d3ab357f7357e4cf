"""What every training protocol offers the runner."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from vfl.protocol.sampler import BatchSampler
from vfl.transport.ledger import Ledger

RoundCallback = Callable[[float], None]
"""Called after every round with that round's training loss (drives progress bars)."""


class Trainer(Protocol):
    """A training protocol driven epoch by epoch.

    Attributes:
        rounds: Global rounds completed so far.
        sampler: The batch order; ``len(sampler)`` rounds make an epoch.
    """

    rounds: int
    sampler: BatchSampler

    @property
    def ledger(self) -> Ledger | None:
        """The communication ledger, or ``None`` when nothing is communicated."""
        ...

    def train_epoch(
        self, epoch: int, *, on_round: RoundCallback | None = None, start: int = 0
    ) -> float:
        """Run one epoch (0-based) from its round ``start`` on; return the mean training loss.

        ``start`` > 0 continues an epoch after a mid-epoch checkpoint; the mean is then over the
        rounds run here.
        """
        ...

    def setup(self) -> None:
        """One-off exchanges before training (key agreement); run again after a restart."""
        ...

    def privacy_spent(self) -> dict[str, float] | None:
        """Epsilon (and delta) spent so far, or ``None`` for a run without a privacy mechanism."""
        ...

    def evaluate(self, split: int) -> dict[str, float]:
        """Metrics of the current model on ``SPLIT_TRAIN`` or ``SPLIT_TEST``."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume after the last completed epoch."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from ``state_dict``."""
        ...

    def close(self) -> None:
        """Release resources (tell parties to stop)."""
        ...
