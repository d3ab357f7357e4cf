"""A party: one organisation's feature block, its bottom model and its optimizer.

With labels private to the server (the default), a party only ever learns d loss / d (its own
embedding): it never sees labels, other parties' features or other parties' embeddings. With
shared labels (C-VFL Algorithm 1) it also holds the labels, receives every party's stale
compressed embedding and a compressed copy of the server model, and trains against them.

Requests are answered by a table of handlers keyed by message kind (``handle``). The other
concerns live beside it: ``party_options`` (the stages a party is given), ``arrivals`` (checks
on the ids and gradients it receives), ``party_labels`` (its steps against labels it holds) and
``party_state`` (its checkpoint).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
from torch import nn

from vfl.data.dataset import check_finite
from vfl.errors import DataError, ProtocolError, WireError
from vfl.models.device import model_device
from vfl.roles.arrivals import check_ids, received_grad
from vfl.roles.local import gradient_steps
from vfl.roles.party_labels import LabelSteps
from vfl.roles.party_options import PartyOptions
from vfl.roles.party_state import PartyState
from vfl.roles.pending import PendingRound, SavedRound, generator_states
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
from vfl.wire.seeds import SeedLabel, evaluation_label


class Party(LabelSteps, PartyState):
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
        ids = check_ids(request.ids, len(self.features[SPLIT_TRAIN]), self.party_id)
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
        return self._upload(embedding.detach(), request.round, SeedLabel.EMBEDDING)

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
        return self._upload(embedding, request.round, SeedLabel.REFRESH)

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
        grad = received_grad(request, pending.embedding, self.options, self.party_id)
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

    @torch.no_grad()
    def _evaluate(self, request: EvalRequest) -> Message:
        if request.split not in self.features:
            raise WireError(
                f"party {self.party_id}: unknown split code {request.split}; valid:"
                f" {sorted(self.features)}"
            )
        ids = check_ids(request.ids, len(self.features[request.split]), self.party_id)
        self.model.eval()
        embedding = self.model(self._rows(request.split, ids))
        self.model.train()
        if self.options.privacy is not None:
            return self.options.privacy.eval_reply(embedding, request.round, split=request.split)
        if self.options.compress_evaluation:
            return self._upload(
                embedding, request.round, evaluation_label(request.split, int(request.ids[0]))
            )
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
