"""Observing one role: every message the transport delivers to it, as that role decodes it.

``vfl.attacks`` attaches an attacker to one party or to the server through these observers, which
the composition root (``compose.build_session``, given ``Taps``) wraps around that role alone:

- a party's **handler** (what its ``PartyEndpoint`` calls with each decoded request frame): the
  observer forwards the request to the party, then reports what the party accepted, with
  compressed gradients decoded by the party's own codec and seeds;
- the server's **transport**: it reports each reply the server received, decoded with the
  server's own codecs, PBM decoder and secure-sum session (so with secure aggregation only sums).

An observer hands its listener ``Delivery`` records holding copies of tensors: nothing in them
leads back to a role, a transport or another party.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

from vfl.compress.codec import MessageSeeds, TensorCodec
from vfl.protocol.loop import ServerLoop
from vfl.protocol.private_sum import PrivateSumTraining
from vfl.roles.party import Party
from vfl.transport.base import Exchange, Handler, Transport
from vfl.transport.ledger import Phase
from vfl.wire import (
    SPLIT_TRAIN,
    CompressedEmbedReply,
    CompressedGradRequest,
    EmbedReply,
    EmbedRequest,
    EvalRequest,
    GradRequest,
    MaskedCounts,
    Message,
    PackedCounts,
    PipelinedRequest,
    RefreshRequest,
)
from vfl.wire.bitpack import unpack_bits
from vfl.wire.seeds import SeedLabel, evaluation_label


@dataclass(frozen=True)
class Delivery:
    """One message delivered to the observed role, as that role decoded it.

    Attributes:
        round: The message's round.
        phase: ``train``, ``eval`` or ``setup`` traffic.
        kind: The message type's name (``GradRequest``, ``EmbedReply``, ``MaskedCounts``...).
        parties: Whose data the content is: the party itself for what a party receives; for the
            server, the sending party, or every party for a secure sum.
        ids: The sample rows the message concerns (from the request that named them), or None.
        split: The split those rows belong to.
        tensor: Its content decoded by the role: a gradient ``(B, P)`` at a party; at the server
            an embedding, a PBM estimate, or a (secure) sum ``(B, P)``; None for control traffic.
    """

    round: int
    phase: str
    kind: str
    parties: tuple[int, ...]
    ids: torch.Tensor | None = None
    split: int = SPLIT_TRAIN
    tensor: torch.Tensor | None = None


Listener = Callable[[Delivery], None]


@dataclass(frozen=True)
class Taps:
    """Who is observed in a composed run: listeners by party id, and the server's."""

    parties: Mapping[int, Listener] = field(default_factory=dict)
    server: Listener | None = None


def _copy(tensor: torch.Tensor | None) -> torch.Tensor | None:
    return None if tensor is None else tensor.detach().clone()


class PartyObserver:
    """A party's handler that reports every request the party accepted.

    Args:
        party_id: The observed party.
        handler: The party's own handler.
        listener: Receives the deliveries.
        gradient: The party's gradient codec (``None``: gradients arrive as float32).
        seeds: The party's message seeds (to decode compressed gradients, as it does).
        width: Its embedding width (the shape of the gradients it receives).
        open_ids: The ids of a round the party embedded and waits to update on, or ``None``
            (``Party.open_round_ids``): what a gradient of that round is about, also after a
            restore between the round's embedding and its gradient.
    """

    def __init__(
        self,
        party_id: int,
        handler: Handler,
        listener: Listener,
        *,
        gradient: TensorCodec | None,
        seeds: MessageSeeds,
        width: int,
        open_ids: Callable[[int], torch.Tensor | None],
    ) -> None:
        self.party_id, self.handler, self.listener = party_id, handler, listener
        self._codec, self._seeds, self._width = gradient, seeds, width
        self._open_ids = open_ids

    def __call__(self, message: Message) -> Message:
        """Let the party answer, then report what it accepted.

        A pipelined request is reported as the two requests it stands for.
        """
        parts: tuple[Message, ...] = (message,)
        if isinstance(message, PipelinedRequest):
            parts = message.split()
        step_ids = self._open_ids(parts[0].round)  # before the party moves on to another round
        reply = self.handler(message)
        for part in parts:
            self.listener(self._delivery(part, step_ids))
        return reply

    def _delivery(self, message: Message, step_ids: torch.Tensor | None) -> Delivery:
        kind, own = type(message).__name__, (self.party_id,)
        if isinstance(message, EmbedRequest):
            return Delivery(message.round, "train", kind, own, ids=_copy(message.ids))
        if isinstance(message, EvalRequest):
            ids = _copy(message.ids)
            return Delivery(message.round, "eval", kind, own, ids=ids, split=message.split)
        if isinstance(message, GradRequest | CompressedGradRequest):
            assert step_ids is not None  # the party accepted a gradient of its open round
            grad = self._gradient(message, len(step_ids))
            return Delivery(message.round, "train", kind, own, _copy(step_ids), tensor=grad)
        return Delivery(message.round, "setup", kind, own)

    def _gradient(self, message: GradRequest | CompressedGradRequest, batch: int) -> torch.Tensor:
        if isinstance(message, GradRequest):
            return message.grad.detach().clone()
        assert self._codec is not None  # the party accepted it
        seed = self._seeds.for_message(SeedLabel.GRADIENT, message.round, self.party_id)
        shape = (batch, self._width)
        return self._codec.decode(message.payload, shape=shape, seed=seed, round_=message.round)


def party_handler(party: Party, taps: Taps, widths: Mapping[int, int]) -> Handler:
    """``party``'s handler, behind an observer when ``taps`` names it."""
    listener = taps.parties.get(party.party_id)
    if listener is None:
        return party.handle
    return PartyObserver(
        party.party_id,
        party.handle,
        listener,
        gradient=party.options.gradient,
        seeds=party.options.seeds,
        width=widths[party.party_id],
        open_ids=party.open_round_ids,
    )


class ObservingTransport(Transport):
    """The server's transport, reporting every reply it delivers, decoded as the server does.

    ``bind`` gives it the server's loop (its codecs, seeds and secure-sum session) once built.
    """

    def __init__(self, inner: Transport, listener: Listener) -> None:
        super().__init__(ledger=inner.ledger)
        self.inner, self.listener = inner, listener
        self._loop: ServerLoop | None = None
        self._batch: torch.Tensor | None = None  # the round's training ids (for refreshes)

    def bind(self, loop: ServerLoop) -> None:
        """Decode replies with ``loop``'s codecs and secure sums from now on."""
        self._loop = loop

    @property
    def party_ids(self) -> tuple[int, ...]:
        """The parties the wrapped transport reaches."""
        return self.inner.party_ids

    def request(self, messages: Mapping[int, Message], *, phase: Phase = "train") -> Exchange:
        """Forward to the wrapped transport, then report every reply of a complete exchange."""
        exchange = self.inner.request(messages, phase=phase)
        if not exchange.failures and self._loop is not None:
            for delivery in self._deliveries(self._loop, messages, exchange.replies, phase):
                self.listener(delivery)
        return exchange

    def close(self) -> None:
        """Close the wrapped transport."""
        self.inner.close()

    def _deliveries(
        self,
        loop: ServerLoop,
        requests: Mapping[int, Message],
        replies: Mapping[int, Message],
        phase: str,
    ) -> list[Delivery]:
        requests = {p: _batch_part(m) for p, m in requests.items()}
        first = next(iter(requests.values()), None)
        if isinstance(first, EmbedRequest):
            self._batch = first.ids
        ids = first.ids if isinstance(first, EmbedRequest | EvalRequest) else self._batch
        if not isinstance(first, EmbedRequest | EvalRequest | RefreshRequest) or ids is None:
            return [Delivery(m.round, phase, type(m).__name__, (p,)) for p, m in replies.items()]
        split = first.split if isinstance(first, EvalRequest) else SPLIT_TRAIN
        if any(isinstance(m, MaskedCounts) for m in replies.values()):
            assert isinstance(loop, PrivateSumTraining)  # only VFL-PBM sends masked blocks
            total = _secure_sum(loop, first, replies, len(ids))
            round_, parties = first.round, tuple(sorted(replies))
            return [Delivery(round_, phase, "MaskedCounts", parties, ids.clone(), split, total)]
        return [
            Delivery(
                reply.round,
                phase,
                type(reply).__name__,
                (party,),
                ids.clone(),
                split,
                _decoded(loop, requests[party], party, reply, len(ids)),
            )
            for party, reply in replies.items()
        ]


def _batch_part(request: Message) -> Message:
    """The request whose replies the server receives: a pipelined request's ``EmbedRequest``."""
    if isinstance(request, PipelinedRequest):
        return request.split()[1]
    return request


def _decoded(
    loop: ServerLoop, request: Message, party: int, reply: Message, batch: int
) -> torch.Tensor | None:
    """One party's upload as the server decodes it (an estimate from PBM counts sent alone)."""
    if isinstance(reply, EmbedReply):
        return reply.embedding.detach().clone()
    if isinstance(reply, CompressedEmbedReply):
        if isinstance(request, EvalRequest):
            purpose = evaluation_label(request.split, int(request.ids[0]))
        else:
            refresh = isinstance(request, RefreshRequest)
            purpose = SeedLabel.REFRESH if refresh else SeedLabel.EMBEDDING
        return loop.decode_embeddings({party: reply}, batch, purpose)[party]
    if isinstance(reply, PackedCounts) and isinstance(loop, PrivateSumTraining):
        mechanism = loop.secure_sum.mechanism
        shape = (batch, loop.server.embedding_dims[party])
        flat = unpack_bits(reply.payload, bits=mechanism.count_bits, count=shape[0] * shape[1])
        counts = torch.from_numpy(flat.reshape(shape).astype(np.int64))
        return mechanism.estimate(counts, contributors=1)
    return None


def _secure_sum(
    loop: PrivateSumTraining, request: Message, replies: Mapping[int, Message], batch: int
) -> torch.Tensor:
    """The only thing masked blocks reveal: the sum over every party (an estimate in training)."""
    shape = (batch, next(iter(loop.server.embedding_dims.values())))
    if isinstance(request, EvalRequest):
        return loop.secure_sum.eval_sum(dict(replies), shape)
    return loop.secure_sum.estimate_sum(dict(replies), shape)
