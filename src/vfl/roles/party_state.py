"""A party's checkpoint: what a resumed run needs to continue as an uninterrupted one would."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from vfl.roles.party_options import PartyOptions
from vfl.roles.pending import PendingRound, SavedRound


class PartyState:
    """``state_dict`` and ``load_state_dict`` of a ``Party`` (a mixin)."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    options: PartyOptions
    _last_round: int
    _pending: PendingRound | None
    _saved: SavedRound | None
    _scores: torch.Tensor | None

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs to continue as an uninterrupted one would.

        Model and optimizer, the last round, the round embedded and not yet updated on (with
        pipelined rounds its gradient may still wait at the server), the top-k selection
        scores, the pruning state and the privacy mechanism's generator. Schedules (bits,
        ratios, learning rates) and message seeds are functions of the round, so they hold no
        state of their own.
        """
        lightweight = self.options.lightweight
        pending = self._pending.state_dict() if self._pending is not None else None
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "last_round": self._last_round,
            "pending": pending,
            "scores": self._scores,
            "lightweight": None if lightweight is None else lightweight.state_dict(),
            "privacy": None if self.options.privacy is None else self.options.privacy.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from ``state_dict``; a pruned checkpoint needs the freshly built model."""
        lightweight = self.options.lightweight
        if lightweight is not None and state.get("lightweight") is not None:
            self.model, self.optimizer = lightweight.restore(
                state["lightweight"], self.model, self.optimizer
            )
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self._last_round = int(state["last_round"])
        self._scores = state.get("scores")
        self._pending = None
        self._saved = SavedRound.from_state(state.get("pending"))
        if self.options.privacy is not None:
            self.options.privacy.load_state_dict(state["privacy"])
