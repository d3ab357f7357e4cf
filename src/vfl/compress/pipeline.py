"""The message pipeline stages shared by parties and the server: codecs and their seeds.

A ``TensorCodec`` turns a tensor into the bytes of a message field and back; the compressors of
``vfl.compress`` are adapted to it. Both ends derive the same seed for every message (the run
seed, what the tensor is, the round and the party), so subtractive dither costs no bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from vfl.seeding import derive_seed

REFRESH = "embedding-refresh"
"""Seed purpose of an embedding re-sent after a party's update (FedBCD-s)."""


class _EvaluationChunk(Protocol):
    @property
    def ids(self) -> torch.Tensor: ...

    @property
    def split(self) -> int: ...


def evaluation_purpose(request: _EvaluationChunk) -> str:
    """Seed purpose of a compressed evaluation embedding: its split and first row.

    An evaluation sends several chunks in one round; each gets its own dither this way, and both
    ends know it from the request alone.
    """
    return f"evaluation-{request.split}-{int(request.ids[0])}"


class TensorCodec(Protocol):
    """Encodes tensors of a known shape to payload bytes and back."""

    def encode(
        self, x: torch.Tensor, *, seed: int, round_: int, scores: torch.Tensor | None = None
    ) -> bytes:
        """The payload for ``x`` in round ``round_``; ``scores`` may steer top-k selection."""
        ...

    def decode(
        self, payload: bytes, *, shape: tuple[int, ...], seed: int, round_: int
    ) -> torch.Tensor:
        """The float32 tensor of ``shape`` a payload stands for; ``WireError`` if malformed."""
        ...


@dataclass(frozen=True)
class MessageSeeds:
    """Seeds that the sender and the receiver of a message derive alike.

    Attributes:
        run_seed: The experiment seed (``train.seed``).
    """

    run_seed: int

    def for_message(self, purpose: str, round_: int, party: int) -> int:
        """The seed of one message: ``purpose`` is e.g. ``"embedding"`` or ``"gradient"``."""
        return derive_seed(self.run_seed, "message", purpose, round_, party)
