"""What every server-side protocol loop shares: batches, exchanges, evaluation, state."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

import torch

from vfl.errors import DIVERGED_HINT, TrainingDiverged, WireError
from vfl.privacy.budget import GaussianEpochBudget
from vfl.protocol.base import RoundCallback
from vfl.protocol.label_privacy import LabelPrivacy
from vfl.protocol.options import LoopOptions
from vfl.protocol.sampler import BatchSampler, chunks
from vfl.protocol.waiting import WaitingGradients
from vfl.results.metrics import evaluate_logits
from vfl.roles.server import Server
from vfl.transport.base import Transport
from vfl.transport.ledger import Ledger, Phase
from vfl.wire import (
    Ack,
    CompressedEmbedReply,
    EmbedReply,
    EmbedRequest,
    EvalRequest,
    Message,
    Shutdown,
)
from vfl.wire.seeds import SeedLabel, evaluation_label

R = TypeVar("R", bound=Message)


class ServerLoop(LabelPrivacy, ABC):
    """Base of the server-side loops: subclasses implement ``exchange``.

    Each concrete loop has a registry ``name`` (``vfl.config.protocols``).

    Args:
        server: The label holder.
        transport: Reaches the parties (in-process or over the network).
        sampler: Batch order.
        eval_batch_size: Samples per evaluation request.
        options: Local steps, codecs, seeds, learning-rate schedule.
    """

    name: ClassVar[str] = ""

    def __init__(
        self,
        server: Server,
        transport: Transport,
        sampler: BatchSampler,
        *,
        eval_batch_size: int,
        options: LoopOptions | None = None,
    ) -> None:
        server.check_parties(transport.party_ids)
        self.server = server
        self.transport = transport
        self.sampler = sampler
        self.eval_batch_size = eval_batch_size
        self.options = options or LoopOptions()
        self.rounds = 0
        self._label_budgets: dict[int, GaussianEpochBudget] = {}  # by releases per epoch
        self._defer = False  # this round's gradients may wait for the next round's batch
        self.waiting = WaitingGradients()

    @property
    def ledger(self) -> Ledger:
        """The transport's communication ledger."""
        return self.transport.ledger

    def setup(self) -> None:
        """Nothing to set up by default."""

    def train_round(self, ids: torch.Tensor) -> float:
        """One round on the batch ``ids`` (the round counter then advances); returns its loss."""
        if self.options.learning_rate is not None and self.server.optimizer is not None:
            self.options.learning_rate.apply(self.server.optimizer, self.rounds)
        loss = self.exchange(ids)
        finite_model = self.server.head_is_finite()
        if not (math.isfinite(loss) and finite_model):
            what = (
                f"the training loss is {loss}"
                if not math.isfinite(loss)
                else "the server model holds NaN or infinite values"
            )
            raise TrainingDiverged(f"{what} after round {self.rounds}: {DIVERGED_HINT}")
        self.rounds += 1
        return loss

    @abstractmethod
    def exchange(self, ids: torch.Tensor) -> float:
        """The protocol's messages and steps for round ``self.rounds`` on batch ``ids``."""

    def train_epoch(
        self, epoch: int, *, on_round: RoundCallback | None = None, start: int = 0
    ) -> float:
        """Run one epoch of rounds from round ``start`` of it on; returns the mean training loss."""
        total = 0.0
        batches = self.sampler.epoch(epoch, start)
        last = len(batches) - 1
        for index, ids in enumerate(batches):
            self._defer = self.options.pipeline and index < last
            try:
                loss = self.train_round(ids)
            finally:
                self._defer = False
            total += loss
            if on_round is not None:
                on_round(loss)
        self.flush()
        return total / len(batches)

    def decode_embeddings(
        self, replies: Mapping[int, Message], batch: int, purpose: str = SeedLabel.EMBEDDING
    ) -> dict[int, torch.Tensor]:
        """The embeddings in the parties' replies, decompressed where they were compressed."""
        embeddings = {}
        codec = self.options.codecs.embedding
        for party, reply in replies.items():
            if isinstance(reply, EmbedReply) and codec is None:
                embeddings[party] = reply.embedding
            elif isinstance(reply, CompressedEmbedReply) and codec is not None:
                seed = self.options.seeds.for_message(purpose, reply.round, party)
                shape = (batch, self.server.embedding_dims[party])
                embeddings[party] = codec.decode(
                    reply.payload, shape=shape, seed=seed, round_=reply.round
                )
            else:
                expected = "EmbedReply" if codec is None else "CompressedEmbedReply"
                raise WireError(
                    f"party {party} answered {type(reply).__name__}, expected {expected}"
                )
        return embeddings

    def evaluate(self, split: int) -> dict[str, float]:
        """Loss and accuracy (plus F1 and AUC for binary tasks) on a whole split."""
        return evaluate_logits(self.server.task, self.logits(split), self.server.labels[split])

    def logits(self, split: int) -> torch.Tensor:
        """The current model's logits for every row of ``split``, in row order.

        Embeddings travel as float32 or, with ``compress_evaluation``, through the embedding
        codec (ledger phase ``eval`` either way). Nothing is trained.
        """
        rows = chunks(len(self.server.labels[split]), self.eval_batch_size)
        return torch.cat([self.logits_for(ids, split) for ids in rows])

    def logits_for(self, ids: torch.Tensor, split: int) -> torch.Tensor:
        """The logits of the rows ``ids`` of ``split``: one evaluation request to every party."""
        compressed = self.options.compress_evaluation and self.options.codecs.embedding is not None
        expected = CompressedEmbedReply if compressed else EmbedReply
        request = EvalRequest(round=self.rounds, ids=ids, split=split)
        replies = self.ask(dict.fromkeys(self.server.party_ids, request), expected, "eval")
        if compressed:
            label = evaluation_label(request.split, int(request.ids[0]))
            embeddings = self.decode_embeddings(replies, len(ids), label)
        else:
            embeddings = {p: m.embedding for p, m in replies.items()}  # type: ignore[attr-defined]
        return self.server.predict(embeddings, len(ids))

    def ask(
        self,
        messages: Mapping[int, Message],
        expected: type[R] | tuple[type[R], ...],
        phase: Phase,
    ) -> dict[int, R]:
        """Send ``messages``, stop on any failure, and check the replies' types.

        An evaluation first sends the gradients that wait for the next round's batch, so that
        it meets every party updated on every round so far.
        """
        if phase == "eval":
            self.flush()
        return self.transport.request(messages, phase=phase).replies_of(expected)

    def request_embeddings(
        self, ids: torch.Tensor, expected: type[R] | tuple[type[R], ...]
    ) -> dict[int, R]:
        """Every party's upload of the round's batch ``ids`` (embeddings, payloads or counts).

        A party whose gradient of the previous round is waiting gets both in one request.
        """
        request = EmbedRequest(round=self.rounds, ids=ids)
        messages = self.waiting.with_batch(request, self.server.party_ids)
        return self.ask(messages, expected, "train")

    def send_gradients(self, messages: Mapping[int, Message]) -> None:
        """Send each party its gradient message of this round and wait for every ``Ack``.

        Inside an epoch with ``LoopOptions.pipeline``, the messages wait instead and travel with
        the next round's batch (``request_embeddings``), or go out on their own at ``flush``.
        """
        if self._defer:
            self.waiting.keep(messages)
            return
        self.ask(messages, Ack, "train")

    def flush(self) -> None:
        """Send the gradients that wait for the next round's batch now, on their own.

        Called before anything that needs the parties up to date: an evaluation (``ask`` in the
        ``eval`` phase) and the end of an epoch.
        """
        if self.waiting:
            self.ask(self.waiting.take(), Ack, "train")

    def state_dict(self) -> dict[str, Any]:
        """Server state, round counter, ledger, waiting gradients (and the gradient noise's).

        A resumed run then sends exactly the messages an uninterrupted one sends (the parties
        keep the round they wait on in their own state). Epsilon follows from the round counter.
        """
        state = {
            "server": self.server.state_dict(),
            "rounds": self.rounds,
            "ledger": self.ledger.state_dict(),
            "waiting": self.waiting.state_dict(),
        }
        if self.options.gradient_noise is not None:
            state["gradient_noise"] = self.options.gradient_noise.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from ``state_dict``."""
        self.waiting.load_state_dict(state.get("waiting", {}))
        self.server.load_state_dict(state["server"])
        self.rounds = int(state["rounds"])
        self.ledger.load_state_dict(state["ledger"])
        if self.options.gradient_noise is not None:
            self.options.gradient_noise.load_state_dict(state["gradient_noise"])

    def close(self) -> None:
        """Tell every party training is over.

        Gradients still waiting are not sent: a run closes with some only when it stopped
        inside an epoch, and then its checkpoint holds them for the resumed run.
        """
        self.waiting.take()
        self.transport.request(
            {p: Shutdown(round=self.rounds) for p in self.server.party_ids}, phase="setup"
        )
        self.transport.close()
