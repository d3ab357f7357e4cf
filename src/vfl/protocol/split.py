"""Baseline VFL: labels private to the server, one step per exchange (split learning).

Each round: the server picks the batch's sample ids; every party embeds its block of those rows;
the server fuses the embeddings, computes the loss and steps its head; it returns d loss /
d embedding to each party, and each party back-propagates it through its bottom model and steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import torch

from vfl.errors import WireError
from vfl.metrics import evaluate_logits
from vfl.protocol.base import RoundCallback
from vfl.protocol.sampler import BatchSampler, chunks
from vfl.server import Server
from vfl.transport.base import Transport
from vfl.transport.ledger import Ledger, Phase
from vfl.wire import Ack, EmbedReply, EmbedRequest, EvalRequest, GradRequest, Message, Shutdown

R = TypeVar("R", bound=Message)


class SplitLearning:
    """The server-side loop of the baseline protocol.

    Args:
        server: The label holder.
        transport: Reaches the parties (in-process or over the network).
        sampler: Batch order.
        eval_batch_size: Samples per evaluation request.
    """

    def __init__(
        self, server: Server, transport: Transport, sampler: BatchSampler, *, eval_batch_size: int
    ) -> None:
        server.check_parties(transport.party_ids)
        self.server = server
        self.transport = transport
        self.sampler = sampler
        self.eval_batch_size = eval_batch_size
        self.rounds = 0

    @property
    def ledger(self) -> Ledger:
        """The transport's communication ledger."""
        return self.transport.ledger

    def train_epoch(self, epoch: int, *, on_round: RoundCallback | None = None) -> float:
        """Run one epoch of rounds; returns the mean training loss."""
        total = 0.0
        batches = self.sampler.epoch(epoch)
        for ids in batches:
            loss = self.train_round(ids)
            total += loss
            if on_round is not None:
                on_round(loss)
        return total / len(batches)

    def train_round(self, ids: torch.Tensor) -> float:
        """One exchange on the batch ``ids``; returns the batch loss."""
        r = self.rounds
        replies = self._ask(
            {p: EmbedRequest(round=r, ids=ids) for p in self.server.party_ids}, EmbedReply, "train"
        )
        loss, grads = self.server.train_step(ids, {p: m.embedding for p, m in replies.items()})
        self._ask({p: GradRequest(round=r, grad=g) for p, g in grads.items()}, Ack, "train")
        self.rounds += 1
        return loss

    def evaluate(self, split: int) -> dict[str, float]:
        """Loss and accuracy (plus F1 and AUC for binary tasks) on a whole split."""
        labels = self.server.labels[split]
        logits = []
        for ids in chunks(len(labels), self.eval_batch_size):
            request = {
                p: EvalRequest(round=self.rounds, ids=ids, split=split)
                for p in self.server.party_ids
            }
            replies = self._ask(request, EmbedReply, "eval")
            logits.append(
                self.server.predict({p: m.embedding for p, m in replies.items()}, len(ids))
            )
        return evaluate_logits(self.server.task, torch.cat(logits), labels)

    def _ask(
        self, messages: Mapping[int, Message], expected: type[R], phase: Phase
    ) -> dict[int, R]:
        exchange = self.transport.request(messages, phase=phase)
        exchange.raise_failures()
        replies: dict[int, R] = {}
        for party, reply in exchange.replies.items():
            if not isinstance(reply, expected):
                raise WireError(
                    f"party {party} answered {type(reply).__name__}, expected {expected.__name__}"
                )
            replies[party] = reply
        return replies

    def state_dict(self) -> dict[str, Any]:
        """Server state, round counter and ledger."""
        return {
            "server": self.server.state_dict(),
            "rounds": self.rounds,
            "ledger": self.ledger.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from ``state_dict``."""
        self.server.load_state_dict(state["server"])
        self.rounds = int(state["rounds"])
        self.ledger.load_state_dict(state["ledger"])

    def close(self) -> None:
        """Tell every party training is over."""
        self.transport.request(
            {p: Shutdown(round=self.rounds) for p in self.server.party_ids}, phase="setup"
        )
        self.transport.close()
