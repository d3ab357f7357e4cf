"""The messages SecureBoost's holders exchange: plain frozen dataclasses, no behaviour.

Ciphertexts travel as ``Ciphertexts``: fixed-width little-endian integers concatenated (the width
is the byte length of ``n^2``), which is what they will cost on the wire. Row sets travel as
ascending ``int64`` row positions of the aligned training table; a node's left/right outcome as
one boolean per row of the node, in the node's row order.

Who sends what (A = the label holder, P = a passive holder):

- A -> P ``PaillierKey``; P -> A ``BinLayout`` (how many bins each of P's columns has).
- per tree: A -> P ``EncryptedGradients``; P -> A ``Ack``.
- per depth: A -> P ``HistogramRequest`` (the rows of the nodes to split); P -> A
  ``HistogramReply`` (packed encrypted cumulative sums); A -> P ``SplitRequest`` for the splits P
  won (column and bin only); P -> A ``SplitReply`` (a record number and which rows go left).
- prediction, per depth: A -> P ``RouteRequest`` (record numbers and rows); P -> A
  ``RouteReply`` (which rows go left).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
NO_NODE = -1


@dataclass(frozen=True)
class Ciphertexts:
    """Paillier ciphertexts as bytes: ``count`` values of ``width`` bytes each, little-endian."""

    width: int
    data: bytes

    @property
    def count(self) -> int:
        """How many ciphertexts."""
        return len(self.data) // self.width if self.width else 0


@dataclass(frozen=True)
class PaillierKey:
    """The label holder's public modulus ``n`` (little-endian bytes)."""

    modulus: bytes


@dataclass(frozen=True)
class BinLayout:
    """A holder's present-value bins per column (its histograms' shape, never its cut points)."""

    bins: tuple[int, ...]


@dataclass(frozen=True)
class EncryptedGradients:
    """One tree's ``Enc(G_i 2^53 + H_i)`` for every training row, in row order.

    Attributes:
        tree: The tree these gradients grow (0-based).
        slot_bits: Width of one packed sum in a histogram reply.
        values: One ciphertext per row.
    """

    tree: int
    slot_bits: int
    values: Ciphertexts


@dataclass(frozen=True)
class Ack:
    """Received and stored."""

    tree: int


@dataclass(frozen=True)
class NodeRows:
    """A node whose histogram is wanted.

    Attributes:
        node: The node's index in its tree.
        rows: Its rows, ascending.
        parent: Its parent's index, or ``NO_NODE`` at the root.
        sibling: A sibling to derive by subtraction (parent minus this node), or ``NO_NODE``.
    """

    node: int
    rows: Rows
    parent: int = NO_NODE
    sibling: int = NO_NODE


@dataclass(frozen=True)
class HistogramRequest:
    """The nodes of one depth of one tree whose histograms are wanted."""

    tree: int
    nodes: tuple[NodeRows, ...]


@dataclass(frozen=True)
class NodeHistogram:
    """One node's encrypted cumulative sums over all the sender's columns, packed."""

    node: int
    values: Ciphertexts


@dataclass(frozen=True)
class HistogramReply:
    """A holder's histograms of every node asked for (siblings included), in node order."""

    tree: int
    histograms: tuple[NodeHistogram, ...]


@dataclass(frozen=True)
class SplitOrder:
    """Split ``node`` after bin ``bin`` of the receiver's column ``column``."""

    node: int
    column: int
    bin: int
    missing_left: bool


@dataclass(frozen=True)
class SplitRequest:
    """The splits of one depth that the receiver's columns won."""

    tree: int
    orders: tuple[SplitOrder, ...]


@dataclass(frozen=True)
class SplitResult:
    """The owner's record number for a split, and which of the node's rows go left."""

    node: int
    record: int
    left: Mask


@dataclass(frozen=True)
class SplitReply:
    """One result per order, in order."""

    tree: int
    results: tuple[SplitResult, ...]


@dataclass(frozen=True)
class RouteQuery:
    """Which of ``rows`` go left at the receiver's split ``record``."""

    record: int
    rows: Rows


@dataclass(frozen=True)
class RouteRequest:
    """Prediction lookups of one depth, every tree at once, on the rows of table ``table``."""

    table: str
    queries: tuple[RouteQuery, ...]


@dataclass(frozen=True)
class RouteReply:
    """One mask per query, in order."""

    left: tuple[Mask, ...]


Request = PaillierKey | EncryptedGradients | HistogramRequest | SplitRequest | RouteRequest
Reply = BinLayout | Ack | HistogramReply | SplitReply | RouteReply
