"""SecureBoost's messages as vfl wire messages (kinds 40-48): flat fields, no pickle.

The wire codec encodes a fixed set of field types, so each SecureBoost message travels flat:
ciphertexts as one ``bytes`` field of fixed-width little-endian integers (their real size), row
sets concatenated into one bit-packed ``Ids`` field with a count per node, per-node integers as
one ``int64`` tensor of rows, and left/right outcomes bit-packed (``numpy.packbits``). The frame's
``round`` is the tree being grown (0 for prediction). ``vfl.boost.codec`` converts both ways and
checks every shape on the way in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from vfl.wire import Ack, Message, register
from vfl.wire.fields import Ids


@register(kind=41)
@dataclass(frozen=True)
class BoostBinLayout(Message):
    """Passive to label holder: present-value bins per column, ``(F,)`` int64."""

    bins: torch.Tensor


@register(kind=40)
@dataclass(frozen=True)
class BoostKeyAnnounce(Message):
    """Label holder to passive: the Paillier modulus ``n``, little-endian."""

    REPLIES: ClassVar[tuple[type[Message], ...]] = (BoostBinLayout,)
    modulus: bytes


@register(kind=42)
@dataclass(frozen=True)
class BoostGradients(Message):
    """Label holder to passive: one ciphertext per training row, ``width`` bytes each."""

    REPLIES: ClassVar[tuple[type[Message], ...]] = (Ack,)
    slot_bits: int
    width: int
    ciphertexts: bytes


@register(kind=44)
@dataclass(frozen=True)
class BoostHistogramReply(Message):
    """Passive to label holder: per node, its packed encrypted cumulative sums.

    Attributes:
        nodes: ``(K, 2)`` int64: node index, number of ciphertexts.
        width: Bytes per ciphertext.
        ciphertexts: Every node's ciphertexts, in ``nodes`` order.
    """

    nodes: torch.Tensor
    width: int
    ciphertexts: bytes


@register(kind=43)
@dataclass(frozen=True)
class BoostHistogramRequest(Message):
    """Label holder to passive: the nodes to sum.

    Attributes:
        nodes: ``(K, 4)`` int64: node, parent, sibling (-1 for none), number of rows.
        rows: Every node's rows, concatenated in ``nodes`` order, bit-packed.
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = (BoostHistogramReply,)
    nodes: torch.Tensor
    rows: Ids


@register(kind=46)
@dataclass(frozen=True)
class BoostSplitReply(Message):
    """Passive to label holder: the splits made, and which rows go left.

    Attributes:
        results: ``(K, 3)`` int64, one per order: node, record number, rows of the node.
        left: One bit per row (1: left), every order's bits concatenated and packed.
    """

    results: torch.Tensor
    left: bytes


@register(kind=45)
@dataclass(frozen=True)
class BoostSplitRequest(Message):
    """Label holder to passive: ``(K, 4)`` int64 orders: node, column, bin, missing-left (0/1)."""

    REPLIES: ClassVar[tuple[type[Message], ...]] = (BoostSplitReply,)
    orders: torch.Tensor


@register(kind=48)
@dataclass(frozen=True)
class BoostRouteReply(Message):
    """Passive to label holder: per query its row count (``(K,)`` int64), then the bits."""

    counts: torch.Tensor
    left: bytes


@register(kind=47)
@dataclass(frozen=True)
class BoostRouteRequest(Message):
    """Label holder to passive: which of these rows of ``table`` go left at each record.

    Attributes:
        table: The name under which the passive holds the rows.
        queries: ``(K, 2)`` int64: record number, number of rows.
        rows: Every query's rows, concatenated in ``queries`` order, bit-packed.
    """

    REPLIES: ClassVar[tuple[type[Message], ...]] = (BoostRouteReply,)
    table: str
    queries: torch.Tensor
    rows: Ids
