"""A party: one organisation's feature block, its bottom model and its optimizer.

With labels private to the server (the default), a party only ever learns d loss / d (its own
embedding): it never sees labels, other parties' features or other parties' embeddings. With
shared labels (C-VFL Algorithm 1) it also holds the labels, receives every party's stale
compressed embedding and a compressed copy of the server model, and trains against them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch
from torch import nn

from vfl.compress.pipeline import REFRESH, MessageSeeds, TensorCodec, evaluation_purpose
from vfl.data.dataset import check_finite
from vfl.errors import DataError, ProtocolError, WireError
from vfl.models.device import model_device
from vfl.models.optim import LearningRateSchedule
from vfl.privacy.secure_sum import PartySecureSum
from vfl.prune.lightweight import Lightweighting
from vfl.roles.local import LocalSteps, block_steps, gradient_steps, view_steps
from vfl.roles.pending import PendingRound, SavedRound, generator_states
from vfl.roles.shared import ActiveBlock, SharedLabels, decode_view, load_vector
from vfl.wire import (
    SPLIT_TEST,
    SPLIT_TRAIN,
    Ack,
    ActiveBlockRequest,
    CompressedEmbedReply,
    CompressedGradEmbedRequest,
    CompressedGradRequest,
    EmbedReply,
    EmbedRequest,
    EvalRequest,
    GradEmbedRequest,
    GradRequest,
    Message,
    PipelinedRequest,
    PublicKeyDirectory,
    RefreshRequest,
    SecAggSetup,
    Shutdown,
    ViewBroadcast,
)
from vfl.wire.checks import all_finite, id_bounds


@dataclass
class PartyOptions:
    """How a party takes part in a protocol (the defaults are plain split learning).

    Attributes:
        steps: Local steps per round and the proximal weight.
        uplink: Compresses this party's embedding (``None``: float32 ``EmbedReply``).
        gradient: Decodes compressed gradients (``None``: float32 ``GradRequest``).
        shared: Shared-labels state, or ``None`` when labels are private to the server.
        seeds: Per-message seeds shared with the server.
        learning_rate: Per-round learning rate, or ``None`` to keep the optimizer's.
        privacy: VFL-PBM: the mechanism and the secure-sum sessions, or ``None``.
        lightweight: LVFL: pruning schedule and per-round compute records, or ``None``.
        compress_evaluation: Send evaluation embeddings through ``uplink`` too.
        active: For the active party (FedBCD's party K, in the label holder's process): the
            head, its optimizer and the labels its exact local steps train with; ``None`` else.
    """

    steps: LocalSteps = field(default_factory=LocalSteps)
    uplink: TensorCodec | None = None
    gradient: TensorCodec | None = None
    shared: SharedLabels | None = None
    seeds: MessageSeeds = field(default_factory=lambda: MessageSeeds(0))
    learning_rate: LearningRateSchedule | None = None
    privacy: PartySecureSum | None = None
    lightweight: Lightweighting | None = None
    compress_evaluation: bool = False
    active: ActiveBlock | None = None


class Party:
    """Holds a feature block and trains a bottom model on it.

    Args:
        party_id: This party's id, 1..M.
        train_features: Its block of the (aligned) training split, ``(N, ...)``.
        test_features: Its block of the test split, ``(N_test, ...)``.
        model: The bottom model, mapping a batch of its block to ``(B, P)`` embeddings.
        optimizer: Optimizer over ``model``'s parameters.
        options: Protocol options (local steps, compression, shared labels).
    """

    def __init__(
        self,
        party_id: int,
        *,
        train_features: torch.Tensor,
        test_features: torch.Tensor,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        options: PartyOptions | None = None,
    ) -> None:
        for name, block in (("train", train_features), ("test", test_features)):
            if not torch.is_floating_point(block):
                raise DataError(
                    f"party {party_id}: {name} features must be floating point, got {block.dtype}"
                )
            check_finite(block.numpy(), what=f"party {party_id}'s {name} features")
        self.party_id = party_id
        self.device = model_device(model)
        if self.device.type == "cuda":  # batches then cross to the device without a copy step
            train_features, test_features = train_features.pin_memory(), test_features.pin_memory()
        self.features = {SPLIT_TRAIN: train_features, SPLIT_TEST: test_features}
        self.model = model
        self.optimizer = optimizer
        self.options = options or PartyOptions()
        self._pending: PendingRound | None = None
        self._saved: SavedRound | None = None  # an open round read back from a checkpoint
        self._batch: tuple[int, torch.Tensor] | None = None  # the round's ids, kept for refresh
        self._last_round = -1
        self._scores: torch.Tensor | None = None  # |d loss / d H| per column, for top-k
        self._compute_seconds = 0.0  # the current round's forward and local steps
        self._handlers = self._handler_table()

    def handle(self, message: Message) -> Message:
        """Answer one request from the server, by its handler for the message's kind."""
        handler = self._handlers.get(message.KIND)
        if handler is None:
            raise ProtocolError(f"party {self.party_id} cannot handle {type(message).__name__}")
        return handler(message)

    def _handler_table(self) -> dict[int, Callable[[Any], Message]]:
        """Each request kind a party answers, and the method that answers it."""
        handlers: dict[type[Message], Callable[[Any], Message]] = {
            EmbedRequest: self._embed,
            GradRequest: self._apply_grad,
            CompressedGradRequest: self._apply_grad,
            GradEmbedRequest: self._pipelined,
            CompressedGradEmbedRequest: self._pipelined,
            ViewBroadcast: self._apply_view,
            ActiveBlockRequest: self._active_steps,
            RefreshRequest: self._refresh,
            SecAggSetup: self._secure_sum_setup,
            PublicKeyDirectory: self._secure_sum_setup,
            EvalRequest: self._evaluate,
            Shutdown: self._shut_down,
        }
        return {cls.KIND: handler for cls, handler in handlers.items()}

    def _pipelined(self, message: PipelinedRequest) -> Message:
        step, embed = message.split()  # exactly the two requests it stands for, in order
        self._apply_grad(step)
        return self._embed(embed)

    def _shut_down(self, message: Shutdown) -> Ack:
        self._pending = self._saved = None
        return Ack(round=message.round)

    def _embed(self, request: EmbedRequest) -> Message:
        if request.round <= self._last_round:
            raise WireError(
                f"party {self.party_id}: embed request for round {request.round} after round"
                f" {self._last_round} (stale or replayed)"
            )
        ids = self._check_ids(request.ids, SPLIT_TRAIN)
        self._last_round = request.round
        started = time.perf_counter()
        lightweight = self.options.lightweight
        if lightweight is not None and not lightweight.after_upload:
            self.model, self.optimizer = lightweight.start_round(
                self.model, self.optimizer, request.round
            )
        if self.options.learning_rate is not None:
            self.options.learning_rate.apply(self.optimizer, request.round)
        rng = generator_states(self.device)
        embedding = self._train_forward(ids)  # (B, P)
        self._compute_seconds = time.perf_counter() - started
        self._pending = PendingRound(request.round, ids, embedding, rng)
        self._saved = None  # a later round is open now
        self._batch = (request.round, ids)
        if self.options.privacy is not None:
            return self.options.privacy.train_reply(embedding.detach(), request.round, rows=ids)
        return self._upload(embedding.detach(), request.round, "embedding")

    def _secure_sum_setup(self, message: SecAggSetup | PublicKeyDirectory) -> Message:
        privacy = self.options.privacy
        if privacy is None:
            raise ProtocolError(f"party {self.party_id} runs no secure aggregation")
        if isinstance(message, SecAggSetup):
            return privacy.handle_setup(message)
        return privacy.handle_directory(message)

    def _upload(
        self, embedding: torch.Tensor, round_: int, purpose: str
    ) -> EmbedReply | CompressedEmbedReply:
        uplink = self.options.uplink
        if uplink is None:
            return EmbedReply(round=round_, embedding=embedding)
        seed = self.options.seeds.for_message(purpose, round_, self.party_id)
        payload = uplink.encode(embedding, seed=seed, round_=round_, scores=self._scores)
        return CompressedEmbedReply(round=round_, payload=payload)

    @torch.no_grad()
    def _refresh(self, request: RefreshRequest) -> EmbedReply | CompressedEmbedReply:
        if self.options.privacy is not None:
            raise ProtocolError(
                f"party {self.party_id} refuses a refresh: it would send its training rows'"
                " exact embeddings, without PBM noise"
            )
        if self._batch is None or self._batch[0] != request.round or self._pending is not None:
            raise WireError(
                f"party {self.party_id}: refresh for round {request.round} before that round's"
                " update"
            )
        embedding = self.model(self._rows(SPLIT_TRAIN, self._batch[1]))
        return self._upload(embedding, request.round, REFRESH)

    def _train_forward(self, ids: torch.Tensor) -> torch.Tensor:
        if not self.model.training:
            self.model.train()
        embedding: torch.Tensor = self.model(self._rows(SPLIT_TRAIN, ids))
        return embedding

    def open_round_ids(self, round_: int) -> torch.Tensor | None:
        """The ids of ``round_`` if this party embedded it and waits to update on it."""
        for open_round in (self._pending, self._saved):
            if open_round is not None and open_round.round == round_:
                return open_round.ids
        return None

    def _take_pending(self, message: Message) -> PendingRound:
        pending, saved = self._pending, self._saved
        if pending is None and saved is not None and saved.round == message.round:
            pending = saved.embed_again(self.model, self._train_forward, self.device)
            self._saved = None
        if pending is None or pending.round != message.round:
            expected = "none pending" if pending is None else f"round {pending.round}"
            raise WireError(
                f"party {self.party_id}: {type(message).__name__} for round {message.round} but"
                f" {expected}"
            )
        self._pending = None
        return pending

    def _apply_grad(self, request: GradRequest | CompressedGradRequest) -> Ack:
        pending = self._take_pending(request)
        grad = self._received_grad(request, pending)
        started = time.perf_counter()
        if self.options.uplink is not None:  # the scores only steer the uplink's selection
            self._scores = grad.abs().mean(dim=0)  # on the host, where the uplink encodes
        grad = grad.to(self.device, non_blocking=True)
        gradient_steps(
            self.model,
            self.optimizer,
            inputs=partial(self._rows, SPLIT_TRAIN, pending.ids),
            grad=grad,
            first_embedding=pending.embedding,
            steps=self.options.steps,
        )
        self._record_compute(pending, time.perf_counter() - started)
        return Ack(round=request.round)

    def _record_compute(self, pending: PendingRound, seconds: float) -> None:
        lightweight = self.options.lightweight
        if lightweight is not None:
            steps = self.options.steps.count
            lightweight.record(
                pending.round,
                self.model,
                input_shape=tuple(self.features[SPLIT_TRAIN].shape[1:]),
                samples=len(pending.ids),
                # With shared labels every step recomputes the own embedding (view_steps).
                forwards=steps + (self.options.shared is not None),
                backwards=steps,
                seconds=self._compute_seconds + seconds,
            )

    def _received_grad(
        self, request: GradRequest | CompressedGradRequest, pending: PendingRound
    ) -> torch.Tensor:
        """The decoded gradient, checked on the host (where the wire left it)."""
        shape = tuple(pending.embedding.shape)
        if isinstance(request, CompressedGradRequest):
            if self.options.gradient is None:
                raise WireError(f"party {self.party_id} expects uncompressed gradients")
            seed = self.options.seeds.for_message("gradient", request.round, self.party_id)
            grad = self.options.gradient.decode(
                request.payload, shape=shape, seed=seed, round_=request.round
            )
        else:
            grad = request.grad
        if tuple(grad.shape) != shape or grad.dtype != pending.embedding.dtype:
            raise WireError(
                f"party {self.party_id}: gradient of shape {tuple(grad.shape)} ({grad.dtype}) for"
                f" an embedding of shape {shape} ({pending.embedding.dtype})"
            )
        if not all_finite(grad):
            raise WireError(
                f"party {self.party_id}: gradient for round {request.round} holds non-finite values"
            )
        return grad

    def _active_steps(self, request: ActiveBlockRequest) -> Ack:
        active = self.options.active
        if active is None:
            raise ProtocolError(f"party {self.party_id} is not the active party")
        pending = self._take_pending(request)
        started = time.perf_counter()
        block_steps(
            self.model,
            self.optimizer,
            head=active.head,
            head_optimizer=active.head_optimizer,
            inputs=self._rows(SPLIT_TRAIN, pending.ids),
            view=active.view(tuple(o.to(self.device, non_blocking=True) for o in request.others)),
            labels=active.labels[pending.ids].to(self.device, non_blocking=True),
            task=active.task,
            steps=self.options.steps,
        )
        self._record_compute(pending, time.perf_counter() - started)
        return Ack(round=request.round)

    def _apply_view(self, broadcast: ViewBroadcast) -> Ack:
        shared = self.options.shared
        if shared is None:
            raise ProtocolError(f"party {self.party_id} holds no labels: it cannot use a view")
        pending = self._take_pending(broadcast)
        view = [
            None if block is None else block.to(self.device, non_blocking=True)
            for block in decode_view(
                shared, broadcast, self.options.seeds, batch=len(pending.ids), own=self.party_id
            )
        ]
        seed = self.options.seeds.for_message("server_model", broadcast.round, 0)
        load_vector(shared.head, shared.server_model, broadcast.server_model, seed, broadcast.round)

        def keep_scores(grad: torch.Tensor) -> None:
            self._scores = grad.abs().mean(dim=0)

        started = time.perf_counter()
        lightweight = self.options.lightweight
        if lightweight is not None and lightweight.after_upload:
            self.model, self.optimizer = lightweight.start_round(
                self.model, self.optimizer, broadcast.round
            )
        view_steps(
            self.model,
            self.optimizer,
            inputs=self._rows(SPLIT_TRAIN, pending.ids),
            view=view,
            head=shared.head,
            labels=shared.labels[pending.ids].to(self.device, non_blocking=True),
            task=shared.task,
            steps=self.options.steps,
            on_embedding_grad=None if self.options.uplink is None else keep_scores,
        )
        self._record_compute(pending, time.perf_counter() - started)
        return Ack(round=broadcast.round)

    @torch.no_grad()
    def _evaluate(self, request: EvalRequest) -> Message:
        if request.split not in self.features:
            raise WireError(
                f"party {self.party_id}: unknown split code {request.split}; valid:"
                f" {sorted(self.features)}"
            )
        ids = self._check_ids(request.ids, request.split)
        self.model.eval()
        embedding = self.model(self._rows(request.split, ids))
        self.model.train()
        if self.options.privacy is not None:
            return self.options.privacy.eval_reply(embedding, request.round, split=request.split)
        if self.options.compress_evaluation:
            return self._upload(embedding, request.round, evaluation_purpose(request))
        return EmbedReply(round=request.round, embedding=embedding)

    def _rows(self, split: int, ids: torch.Tensor) -> torch.Tensor:
        """This party's rows ``ids`` of ``split``, on its model's device."""
        rows = torch.index_select(self.features[split], 0, ids)  # faster than [ids]
        if self.device.type == "cpu":
            return rows
        return rows.to(self.device, non_blocking=True)

    def use_rows(self, split: int, block: torch.Tensor) -> None:
        """Answer later evaluation requests of ``split`` from ``block`` (new rows to score).

        Raises:
            DataError: if ``block`` is not floating point, holds non-finite values, or its rows
                have another shape than the party's features.
        """
        shape = tuple(self.features[split].shape[1:])
        if not torch.is_floating_point(block) or tuple(block.shape[1:]) != shape:
            raise DataError(
                f"party {self.party_id}: rows to score must be floating point of row shape"
                f" {shape}, got {tuple(block.shape[1:])} ({block.dtype})"
            )
        check_finite(block.numpy(), what=f"party {self.party_id}'s rows to score")
        self.features[split] = block

    def _check_ids(self, ids: torch.Tensor, split: int) -> torch.Tensor:
        rows = len(self.features[split])
        if ids.dtype != torch.int64 or ids.ndim != 1 or len(ids) == 0:
            raise WireError(
                f"party {self.party_id}: ids must be a non-empty 1-D int64 tensor, got shape"
                f" {tuple(ids.shape)} ({ids.dtype})"
            )
        low, high = id_bounds(ids)
        if low < 0 or high >= rows:
            raise WireError(
                f"party {self.party_id}: ids must lie in [0, {rows - 1}], got [{low}, {high}]"
            )
        return ids

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
