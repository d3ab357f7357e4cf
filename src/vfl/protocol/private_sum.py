"""VFL-PBM: PBM counts summed securely, one step per exchange (Tran et al., Algorithm 2).

Per round (Tran et al., "Privacy Tradeoffs in Vertical Federated Learning", Section 4): every party
privatizes its tanh-bounded embedding with the Poisson Binomial Mechanism and sends the counts
masked for secure aggregation; the server recovers only their sum Q, estimates the sum of the
embeddings (C / (beta b)) (Q - b M / 2), takes its step on the sum-fusion head, and sends the
SAME d loss / d sum to every party, which back-propagates it as if PBM were the identity. An
accountant composes one PBM release per sample per epoch and reports epsilon.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from vfl.errors import ConfigError
from vfl.privacy.budget import EpochBudget
from vfl.protocol.options import LoopOptions
from vfl.protocol.sampler import BatchSampler
from vfl.protocol.split_learning import SplitLearning
from vfl.roles.server import Server
from vfl.transport.base import Transport
from vfl.wire import (
    Ack,
    EvalRequest,
    MaskedCounts,
    PackedCounts,
    PublicKeyAnnounce,
)


class PrivateSumTraining(SplitLearning):
    """The server-side loop of VFL-PBM.

    Args:
        server: The label holder, with a sum-fusion head.
        transport: Reaches the parties.
        sampler: Batch order.
        eval_batch_size: Samples per evaluation request.
        options: Local steps, gradient codec, seeds, learning-rate schedule, and the privacy
            stage (``options.privacy``: secure sums, the event one epoch releases, delta).
    """

    name = "private_sum"

    def __init__(
        self,
        server: Server,
        transport: Transport,
        sampler: BatchSampler,
        *,
        eval_batch_size: int,
        options: LoopOptions | None = None,
    ) -> None:
        super().__init__(
            server, transport, sampler, eval_batch_size=eval_batch_size, options=options
        )
        if self.options.privacy is None:
            raise ConfigError("the VFL-PBM loop needs its privacy stage (LoopOptions.privacy)")
        self.secure_sum = self.options.privacy.secure_sum
        self.event = self.options.privacy.event
        self.delta = self.options.privacy.delta
        self.budget = EpochBudget(self.event, self.delta)
        self.coalition_budget = EpochBudget(replace(self.event, parties=1), self.delta)

    def setup(self) -> None:
        """Agree on pairwise keys through the server (public keys only; fresh every start)."""
        if not self.secure_sum.secure:
            return
        parties = self.server.party_ids
        setup = self.secure_sum.setup_message(self.rounds)
        announced = self.ask(dict.fromkeys(parties, setup), PublicKeyAnnounce, "setup")
        directory = self.secure_sum.directory(
            self.rounds, {p: m.public_key for p, m in announced.items()}
        )
        self.ask(dict.fromkeys(parties, directory), Ack, "setup")

    def exchange(self, ids: torch.Tensor) -> float:
        """One private round; returns the loss at the estimated sum."""
        r = self.rounds
        parties = self.server.party_ids
        replies = self.request_embeddings(ids, (MaskedCounts, PackedCounts))
        width = next(iter(self.server.embedding_dims.values()))
        total = self.secure_sum.estimate_sum(dict(replies), (len(ids), width))
        loss, grad = self.server.train_on_sum(ids, total, self.options.steps)
        grad = grad.cpu()  # every party's gradient: one copy to the host for all
        noised = self.noised_gradients(dict.fromkeys(parties, grad))
        self.send_gradients({p: self.gradient_message(r, p, noised[p]) for p in parties})
        return loss

    def logits_for(self, ids: torch.Tensor, split: int) -> torch.Tensor:
        """Logits from the exact sum of the parties' embeddings (securely summed).

        Evaluation and prediction add no noise: with secure aggregation the parties' fixed-point
        embeddings are masked so that the server learns only their sum, and no PBM release is
        made (the accountant's epsilon does not grow).
        """
        if not self.secure_sum.secure:
            return super().logits_for(ids, split)
        width = next(iter(self.server.embedding_dims.values()))
        request = EvalRequest(round=self.rounds, ids=ids, split=split)
        replies = self.ask(dict.fromkeys(self.server.party_ids, request), MaskedCounts, "eval")
        total = self.secure_sum.eval_sum(dict(replies), (len(ids), width))
        return self.server.predict_on_sum(total)

    def privacy_spent(self) -> dict[str, float]:
        """Epsilon at the configured delta for what has been released so far.

        ``epsilon`` counts the noise of every party in the sum (the server's view);
        ``epsilon_coalition`` only the target party's own (any coalition of the other parties).
        """
        epochs = self.epochs_started
        spent = {
            "epsilon": self.budget.epsilon(epochs),
            "delta": self.delta,
            "epsilon_coalition": self.coalition_budget.epsilon(epochs),
        }
        return {**spent, **(super().privacy_spent() or {})}

    def privacy_claims(self) -> dict[str, dict[str, Any]]:
        """What ``epsilon`` and ``epsilon_coalition`` cover, beside the label noise's claims."""
        claims = super().privacy_claims()
        parties = self.event.parties
        server = (
            f"features, against the server alone (it learns only the secure sum: all {parties}"
            " parties' noise); not against a party, which knows its own counts"
            if self.secure_sum.secure
            else "features, against the server (counts in the clear: each party's own noise)"
        )
        coalition = (
            "features, against any party or coalition of parties, with or without the server"
            " (they know their own counts: only the target party's noise counts, M = 1)"
        )
        threat = {"epsilon": server, "epsilon_coalition": coalition}
        accounting = {key: self.budget.describe() for key in threat}
        return {
            **claims,
            "threat_model": {**threat, **claims.get("threat_model", {})},
            "accounting": {**accounting, **claims.get("accounting", {})},
        }
