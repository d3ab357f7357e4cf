"""Message types of the VFL protocols.

Kind codes are part of the wire format: never renumber or reuse one; append new types.
Tensor shapes use B = batch size and P = the sending party's embedding width.

Every request declares the replies it accepts (``REPLIES``), and a reply type may check its
content against the request it answers (``check_answer``); both transports apply these rules
to every reply they receive (``Message.check_reply``), so replies are defined first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from vfl.errors import WireError
from vfl.wire.checks import all_finite
from vfl.wire.fields import Ids
from vfl.wire.schema import Message, register

SPLIT_TRAIN = 0
SPLIT_TEST = 1
PUBLIC_KEY_BYTES = 32

# Replies (party to server).


@register(kind=2)
@dataclass(frozen=True)
class EmbedReply(Message):
    """Party to server: the embedding of the requested samples, shape ``(B, P)``."""

    embedding: torch.Tensor

    def check_answer(self, request: Message) -> None:
        """A finite 2-D float tensor with one row per requested sample."""
        embedding = self.embedding
        if embedding.ndim != 2 or not torch.is_floating_point(embedding):
            raise WireError(
                f"an embedding must be a 2-D floating point tensor (batch, width), got"
                f" {embedding.dtype} of shape {tuple(embedding.shape)}"
            )
        ids = getattr(request, "ids", None)
        if isinstance(ids, torch.Tensor) and embedding.shape[0] != ids.shape[0]:
            raise WireError(
                f"an embedding of {embedding.shape[0]} rows answers a request for"
                f" {ids.shape[0]} samples"
            )
        if not all_finite(embedding):
            raise WireError(
                "an embedding holds non-finite values (the party's model diverged, or the"
                " message is corrupt)"
            )


@register(kind=4)
@dataclass(frozen=True)
class Ack(Message):
    """Party to server: the request of this round was carried out."""


# Kinds 10-19: compressed exchanges and local iterations (C-VFL, FedBCD, LVFL).


@register(kind=10)
@dataclass(frozen=True)
class CompressedEmbedReply(Message):
    """Party to server: the round's embedding, compressed; the payload layout is the compressor's.

    The server knows the shape ``(B, P)`` from the request and the party, and derives the
    compressor's dither seed from the round and the sender, so the payload carries neither.
    """

    payload: bytes


# Kinds 20-29: the Poisson Binomial Mechanism and secure aggregation (VFL-PBM).


@register(kind=21)
@dataclass(frozen=True)
class PublicKeyAnnounce(Message):
    """Party to server: this party's X25519 public key (32 bytes) for the run."""

    public_key: bytes

    def check_answer(self, request: Message) -> None:
        """An X25519 public key is exactly 32 bytes."""
        if len(self.public_key) != PUBLIC_KEY_BYTES:
            raise WireError(
                f"a public key must be {PUBLIC_KEY_BYTES} bytes, got {len(self.public_key)}"
            )


@register(kind=23)
@dataclass(frozen=True)
class MaskedCounts(Message):
    """Party to server: a (B, P) block masked mod 2^k, bit-packed at k bits per value.

    In training the block holds PBM counts; in evaluation, fixed-point embeddings. Only the sum
    over all parties means anything to the server.
    """

    payload: bytes


@register(kind=24)
@dataclass(frozen=True)
class PackedCounts(Message):
    """Party to server (PBM without secure aggregation): counts bit-packed at ceil(log2(b+1))."""

    payload: bytes


# Requests (server to party).


@register(kind=1)
@dataclass(frozen=True)
class EmbedRequest(Message):
    """Server to party: embed these training samples and keep the graph for the backward pass.

    Attributes:
        ids: ``int64`` row positions in the aligned training split, shape ``(B,)``, sent
            bit-packed (``vfl.wire.fields.IdsField``).
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = (
        EmbedReply,
        CompressedEmbedReply,
        MaskedCounts,
        PackedCounts,
    )
    ids: Ids


@register(kind=3)
@dataclass(frozen=True)
class GradRequest(Message):
    """Server to party: d loss / d embedding for the round's batch, shape ``(B, P)``; step on it."""

    REPLIES: ClassVar[tuple[type[Message], ...]] = (Ack,)
    grad: torch.Tensor


@register(kind=5)
@dataclass(frozen=True)
class EvalRequest(Message):
    """Server to party: embed these samples in evaluation mode (no graph, no update).

    Attributes:
        ids: ``int64`` row positions, shape ``(B,)``, sent bit-packed.
        split: ``SPLIT_TRAIN`` or ``SPLIT_TEST``.
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = (EmbedReply, CompressedEmbedReply, MaskedCounts)
    ids: Ids
    split: int


@register(kind=6)
@dataclass(frozen=True)
class Shutdown(Message):
    """Server to party: training is over; release resources."""

    REPLIES: ClassVar[tuple[type[Message], ...]] = (Ack,)


@register(kind=11)
@dataclass(frozen=True)
class CompressedGradRequest(Message):
    """Server to party: d loss / d embedding for the round, compressed; take the local steps."""

    REPLIES: ClassVar[tuple[type[Message], ...]] = (Ack,)
    payload: bytes


@register(kind=7)
@dataclass(frozen=True)
class GradEmbedRequest(Message):
    """Server to party: the previous round's gradient, then this round's batch (pipelined rounds).

    One message instead of a ``GradRequest`` for round ``round - 1``, its ``Ack``, and the
    ``EmbedRequest`` of round ``round``: the party steps on ``grad`` exactly as on that
    ``GradRequest``, then embeds ``ids`` and answers as to that ``EmbedRequest``.

    Attributes:
        grad: d loss / d embedding of round ``round - 1``'s batch, shape ``(B, P)``.
        ids: Round ``round``'s row positions, shape ``(B,)``, sent bit-packed.
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = EmbedRequest.REPLIES
    grad: torch.Tensor
    ids: Ids

    def split(self) -> tuple[GradRequest, EmbedRequest]:
        """The two requests this one stands for, each with its own round."""
        return GradRequest(round=_previous(self), grad=self.grad), EmbedRequest(
            round=self.round, ids=self.ids
        )


@register(kind=15)
@dataclass(frozen=True)
class CompressedGradEmbedRequest(Message):
    """Server to party: ``GradEmbedRequest`` with the gradient compressed (``payload``).

    Attributes:
        payload: Round ``round - 1``'s compressed d loss / d embedding.
        ids: Round ``round``'s row positions, shape ``(B,)``, sent bit-packed.
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = EmbedRequest.REPLIES
    payload: bytes
    ids: Ids

    def split(self) -> tuple[CompressedGradRequest, EmbedRequest]:
        """The two requests this one stands for, each with its own round."""
        return CompressedGradRequest(round=_previous(self), payload=self.payload), EmbedRequest(
            round=self.round, ids=self.ids
        )


PipelinedRequest = GradEmbedRequest | CompressedGradEmbedRequest
"""A gradient of the previous round carried together with the next round's batch."""


def pipelined(step: Message, embed: EmbedRequest) -> PipelinedRequest:
    """One request carrying ``step`` (a round's gradient) and ``embed`` (the next round's batch).

    Raises:
        ValueError: if ``step`` is not a gradient request or ``embed`` is not of the next round.
    """
    if step.round + 1 != embed.round:
        raise ValueError(
            f"a round-{step.round} gradient travels only with round {step.round + 1}'s batch,"
            f" not round {embed.round}'s"
        )
    if isinstance(step, GradRequest):
        return GradEmbedRequest(round=embed.round, grad=step.grad, ids=embed.ids)
    if isinstance(step, CompressedGradRequest):
        return CompressedGradEmbedRequest(round=embed.round, payload=step.payload, ids=embed.ids)
    raise ValueError(f"only a gradient request travels with a batch, not {type(step).__name__}")


def _previous(request: Message) -> int:
    if request.round < 1:
        raise WireError(
            f"{type(request).__name__} of round {request.round} carries the gradient of a round"
            " before the first"
        )
    return request.round - 1


@register(kind=12)
@dataclass(frozen=True)
class ViewBroadcast(Message):
    """Server to party (shared labels, C-VFL Algorithm 1): the round's stale compressed view.

    Attributes:
        embeddings: Every party's compressed embedding payload as received, in party order (the
            receiver's own included, as the paper's cost model counts it).
        server_model: The server model's parameters, flattened and compressed with C_0.
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = (Ack,)
    embeddings: tuple[bytes, ...]
    server_model: bytes


@register(kind=13)
@dataclass(frozen=True)
class RefreshRequest(Message):
    """Server to party (FedBCD-s): re-embed this round's batch with your updated model."""

    REPLIES: ClassVar[tuple[type[Message], ...]] = (EmbedReply, CompressedEmbedReply)


@register(kind=14)
@dataclass(frozen=True)
class ActiveBlockRequest(Message):
    """Label holder to the active party (FedBCD's party K): take your block's Q local steps.

    The active party lives in the label holder's process (this message is never encoded); its
    steps are exact at the stale embeddings of every other party.

    Attributes:
        others: The other parties' embeddings of the round's batch as the label holder received
            them, ``(B, P_q)`` each, in party order (the active party's own left out).
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = (Ack,)
    others: tuple[torch.Tensor, ...]


@register(kind=20)
@dataclass(frozen=True)
class SecAggSetup(Message):
    """Server to party: start secure aggregation (Bonawitz et al.'s Protocol 0).

    Attributes:
        run_id: Fresh random bytes naming this key agreement (bound into every pair seed).
        party_ids: ``int64`` ids of all parties, ascending.
        max_count: The largest count a party contributes in training (PBM's b).
        bits: k: masked counts are sent mod 2^k, k >= ceil(log2(M b + 1)).
        eval_fraction_bits: f: evaluation embeddings are summed securely in fixed point with
            2^f steps per clip bound (0: evaluation embeddings are not aggregated securely).
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = (PublicKeyAnnounce,)
    run_id: bytes
    party_ids: torch.Tensor
    max_count: int
    bits: int
    eval_fraction_bits: int


@register(kind=22)
@dataclass(frozen=True)
class PublicKeyDirectory(Message):
    """Server to party: every party's public key, relayed; the server holds no private key."""

    REPLIES: ClassVar[tuple[type[Message], ...]] = (Ack,)
    party_ids: torch.Tensor
    public_keys: tuple[bytes, ...]
