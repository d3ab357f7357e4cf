"""The labels' privacy under gradient noise, as a server-side loop reports it.

``LabelPrivacy`` is the part of ``ServerLoop`` that counts the epochs a run has begun and
answers what the noised gradients have spent of the labels' privacy (PLD accounting per number
of epochs), against any coalition of the passive parties and against one alone.
"""

from __future__ import annotations

from typing import Any

from vfl.privacy.budget import GaussianEpochBudget
from vfl.privacy.events import SelfComposedEvent
from vfl.protocol.options import LoopOptions
from vfl.protocol.sampler import BatchSampler
from vfl.roles.server import Server


class LabelPrivacy:
    """Epochs begun and the labels' epsilon under gradient noise (a ``ServerLoop`` mixin)."""

    server: Server
    sampler: BatchSampler
    options: LoopOptions
    rounds: int
    _label_budgets: dict[int, GaussianEpochBudget]

    @property
    def epochs_started(self) -> int:
        """Epochs with at least one round run: each has released every sample once, or will.

        Epsilon is per sample, so an epoch counts from its first round on (a sample of that
        round has been released once more): mid-epoch records carry what was spent so far.
        """
        return -(-self.rounds // len(self.sampler))

    @property
    def label_releases(self) -> int:
        """Noised gradient rows of one sample per epoch that all passive parties together hold.

        Every party that receives gradients (all but an active party in the label holder's
        process) gets its row with a noise draw of its own: a coalition of them pools this many.
        """
        active = self.options.active_party
        return sum(1 for party in self.server.party_ids if party != active)

    def label_budget(self, *, coalition: bool = True) -> GaussianEpochBudget | None:
        """The gradient noise's epsilon per number of epochs (PLD), if gradients are noised.

        ``coalition``: every party's rows pooled (``label_releases`` per epoch, what
        ``label_epsilon`` states); else one party's alone (one release per epoch).
        """
        noise = self.options.gradient_noise
        if noise is None:
            return None
        releases = self.label_releases if coalition else 1
        if releases not in self._label_budgets:
            event = SelfComposedEvent(noise.event(), releases)
            self._label_budgets[releases] = GaussianEpochBudget(event, self.options.delta)
        return self._label_budgets[releases]

    def privacy_spent(self) -> dict[str, float] | None:
        """The gradient noise's epsilon of the labels so far, if gradients are noised.

        ``label_epsilon`` against any coalition of passive parties; ``label_epsilon_one_party``
        against one passive party alone.
        """
        pooled, alone = self.label_budget(), self.label_budget(coalition=False)
        if pooled is None or alone is None:
            return None
        epochs = self.epochs_started
        return {
            "label_epsilon": pooled.epsilon(epochs),
            "label_delta": pooled.delta,
            "label_epsilon_one_party": alone.epsilon(epochs),
        }

    def privacy_claims(self) -> dict[str, dict[str, Any]]:
        """What each reported epsilon covers, how it is computed, and its cross-check."""
        budget = self.label_budget()
        if budget is None:
            return {}
        releases = self.label_releases
        return {
            "threat_model": {
                "label_epsilon": (
                    "labels, against any passive party and any coalition of passive parties"
                    f" pooling what they receive ({releases} noised row(s) per sample and epoch,"
                    " each party's with a noise draw of its own, all counted); the server holds"
                    " the labels"
                ),
                "label_epsilon_one_party": (
                    "labels, against one passive party alone (its own noised row per sample"
                    " and epoch)"
                ),
            },
            "accounting": {
                "label_epsilon": budget.describe(),
                "label_epsilon_one_party": budget.describe(),
            },
            "cross_check": {"label_epsilon_rdp": budget.rdp_epsilon(self.epochs_started)},
        }
