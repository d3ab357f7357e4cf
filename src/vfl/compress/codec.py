"""The message stages shared by parties and the server: codecs and their seeds.

A ``TensorCodec`` turns a tensor into the bytes of a message field and back; the compressors of
``vfl.compress`` are adapted to it. Both ends derive the same seed for every message (the run
seed, what the tensor is, the round and the party), so subtractive dither costs no bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from vfl.seeding import derive_seed


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
        """The seed of one message: ``purpose`` is its ``vfl.wire.seeds`` label."""
        return derive_seed(self.run_seed, "message", purpose, round_, party)
