"""What every server-side protocol loop shares: batches, exchanges, evaluation, state."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import torch

from vfl.compress.pipeline import MessageSeeds, TensorCodec
from vfl.errors import DIVERGED_HINT, TrainingDiverged, WireError
from vfl.models.optim import LearningRateSchedule
from vfl.privacy.budget import GaussianEpochBudget
from vfl.privacy.events import PbmEvent, SelfComposedEvent
from vfl.privacy.gradient_noise import GradientNoise
from vfl.privacy.secure_sum import ServerSecureSum
from vfl.protocol.base import RoundCallback
from vfl.protocol.sampler import BatchSampler, chunks
from vfl.protocol.waiting import WaitingGradients
from vfl.results.metrics import evaluate_logits
from vfl.roles.local import LocalSteps
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


@dataclass(frozen=True)
class Links:
    """The codec of each compressed tensor; ``None`` sends float32 tensors as they are.

    Attributes:
        embedding: Parties' embeddings to the server (C_1..C_M).
        gradient: Gradients from the server to the parties (labels private).
        server_model: The server model to the parties (C_0; labels shared).
    """

    embedding: TensorCodec | None = None
    gradient: TensorCodec | None = None
    server_model: TensorCodec | None = None


@dataclass(frozen=True)
class ServerPrivacy:
    """VFL-PBM at the server: the secure-sum sessions, what one epoch releases, the delta.

    Attributes:
        secure_sum: The mechanism and the secure-aggregation sessions.
        event: One release of one sample's embedding (for the accountant).
        delta: The delta of the reported epsilon.
    """

    secure_sum: ServerSecureSum
    event: PbmEvent
    delta: float


@dataclass(frozen=True)
class LoopOptions:
    """Server-side protocol options.

    Attributes:
        steps: Q and the proximal weight for the server's own steps.
        links: The codecs.
        seeds: Per-message seeds shared with the parties.
        learning_rate: Per-round learning rate, or ``None`` to keep the optimizer's.
        privacy: The private-aggregation stage (VFL-PBM), or ``None``.
        compress_evaluation: Evaluation embeddings arrive through the embedding codec.
        active_party: The party whose block includes the head (FedBCD's party K, in the server's
            process), or 0.
        gradient_noise: Clips and noises every gradient row sent to a party, or ``None``.
        delta: The delta of the gradient noise's reported epsilon.
        pipeline: Inside an epoch, a round's gradients travel with the next round's batch
            (``GradEmbedRequest``: one message to each party and one reply per round instead of
            two of each); the parties compute exactly what they would otherwise.
    """

    steps: LocalSteps = field(default_factory=LocalSteps)
    links: Links = field(default_factory=Links)
    seeds: MessageSeeds = field(default_factory=lambda: MessageSeeds(0))
    learning_rate: LearningRateSchedule | None = None
    privacy: ServerPrivacy | None = None
    compress_evaluation: bool = False
    active_party: int = 0
    gradient_noise: GradientNoise | None = None
    delta: float = 1e-5
    pipeline: bool = False


class ServerLoop(ABC):
    """Base of the server-side loops: subclasses implement ``exchange``.

    Each concrete loop has a registry ``name`` (``vfl.protocol.registry``).

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

    def setup(self) -> None:  # noqa: B027 - an optional hook, not an abstract step
        """Nothing to set up by default."""

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
        codec = self.options.links.embedding
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
        compressed = self.options.compress_evaluation and self.options.links.embedding is not None
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
