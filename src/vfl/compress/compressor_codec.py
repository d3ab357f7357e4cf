"""Adapters from ``vfl.compress`` compressors to the pipeline's ``TensorCodec``."""

from __future__ import annotations

from collections.abc import Callable

import torch

from vfl.compress.base import Compressor

CompressorForBits = Callable[[int], Compressor]
"""Builds the compressor to use with ``b`` bits per component."""


class CompressorCodec:
    """A ``TensorCodec`` backed by a compressor, optionally with ``b`` following a schedule.

    Args:
        compressor: The compressor (fixed ``b``), or a builder taking ``b`` (with ``bits_at``).
        bits_at: Bits per component for a round (a ``vfl.compress`` schedule's ``bits_at``);
            ``None`` keeps ``compressor`` fixed.
        use_scores: Pass selection scores through (top-k by the previous step's gradient);
            otherwise selection falls back to the compressor's own rule (magnitude).
    """

    def __init__(
        self,
        compressor: Compressor | CompressorForBits,
        *,
        bits_at: Callable[[int], int] | None = None,
        use_scores: bool = False,
    ) -> None:
        if bits_at is None and not isinstance(compressor, Compressor):
            raise ValueError("a compressor builder needs a bits schedule (bits_at)")
        self._compressor = compressor
        self._bits_at = bits_at
        self._use_scores = use_scores
        self._by_bits: dict[int, Compressor] = {}

    def at(self, round_: int) -> Compressor:
        """The compressor in use in round ``round_``."""
        if isinstance(self._compressor, Compressor):
            return self._compressor
        assert self._bits_at is not None
        bits = self._bits_at(round_)
        if bits not in self._by_bits:
            self._by_bits[bits] = self._compressor(bits)
        return self._by_bits[bits]

    def encode(
        self, x: torch.Tensor, *, seed: int, round_: int, scores: torch.Tensor | None = None
    ) -> bytes:
        """The compressed payload of ``x``."""
        selection = scores if self._use_scores else None
        return self.at(round_).compress(x, seed=seed, scores=selection).payload

    def decode(
        self, payload: bytes, *, shape: tuple[int, ...], seed: int, round_: int
    ) -> torch.Tensor:
        """The decompressed tensor of ``shape``."""
        compressor = self.at(round_)
        return compressor.decompress(compressor.from_bytes(payload, shape), seed=seed)
