"""A party's local steps against labels it holds: shared labels, or the active party.

``LabelSteps`` is the part of ``Party`` that answers ``ViewBroadcast`` (shared labels, C-VFL
Algorithm 1) and ``ActiveBlockRequest`` (FedBCD's party K, in the label holder's process): both
train the party's bottom against labels it holds, one with the
stale view of the round, the other with the server's head.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch import nn

from vfl.errors import ProtocolError
from vfl.roles.local import block_steps, view_steps
from vfl.roles.party_options import PartyOptions
from vfl.roles.pending import PendingRound
from vfl.roles.shared import decode_view, load_vector
from vfl.wire import SPLIT_TRAIN, Ack, ActiveBlockRequest, Message, ViewBroadcast
from vfl.wire.seeds import SeedLabel


class LabelSteps:
    """Local steps against labels the party holds (a ``Party`` mixin)."""

    party_id: int
    device: torch.device
    model: nn.Module
    optimizer: torch.optim.Optimizer
    options: PartyOptions
    _scores: torch.Tensor | None
    _rows: Callable[[int, torch.Tensor], torch.Tensor]
    _take_pending: Callable[[Message], PendingRound]
    _record_compute: Callable[[PendingRound, float], None]

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
        seed = self.options.seeds.for_message(SeedLabel.SERVER_MODEL, broadcast.round, 0)
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
