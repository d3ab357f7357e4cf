"""Seed labels: what a compressed payload holds, named once for its sender and its receiver.

A codec's dither is drawn from a seed both ends of a message derive alike, from the run seed,
this label, the round and the party (``vfl.compress.codec.MessageSeeds``), so subtractive
dither costs no bytes. Both ends name the label through these constants: a misspelt constant
is an ``AttributeError``, where a misspelt string would silently give each end its own dither.
"""

from __future__ import annotations

from enum import StrEnum


class SeedLabel(StrEnum):
    """The tensor a compressed payload carries (its value is what the seed derivation hashes)."""

    EMBEDDING = "embedding"
    """A party's training embedding (``CompressedEmbedReply``; shared labels' broadcast)."""
    GRADIENT = "gradient"
    """The server's gradient for a party's embedding (``CompressedGradRequest``)."""
    SERVER_MODEL = "server_model"
    """The server model's parameter vector broadcast under shared labels (C-VFL)."""
    REFRESH = "embedding-refresh"
    """An embedding re-sent after a party's update (FedBCD-s, ``RefreshRequest``)."""


_LABELS = frozenset(label.value for label in SeedLabel)

EVALUATION_PREFIX = "evaluation"
"""Labels of compressed evaluation embeddings start with this, then the split and first row."""


def evaluation_label(split: int, first_id: int) -> str:
    """The label of one compressed evaluation chunk: its split and its first row.

    An evaluation sends several chunks in one round; each gets its own dither this way, and both
    ends know it from the request alone.
    """
    return f"{EVALUATION_PREFIX}-{split}-{first_id}"


def is_seed_label(label: str) -> bool:
    """Whether ``label`` is one of the labels above (an evaluation chunk's included)."""
    if label in _LABELS:
        return True
    prefix, _, rest = label.partition("-")
    split, _, first = rest.partition("-")
    return prefix == EVALUATION_PREFIX and split.isdigit() and first.isdigit()
