"""A compressor defined and registered here, outside the package: one ``register_compressor``.

``SignCompressor`` sends each component's sign (one bit, packed) and one float32 scale per
message or per row (the mean magnitude), so that ``scale·sign(x)`` stands for ``x``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from vfl.compress import register_compressor
from vfl.compress.base import Array, Compressor, Floats, Shape, as_float32, check_shape, rows_of
from vfl.compress.registry import unregister_compressor
from vfl.schedules import check_int

SCALE_BITS = 32


@dataclass(frozen=True, kw_only=True)
class SignCompressor(Compressor):
    """One bit per component and a float32 scale: ``scale·sign(x)``, scale = mean ``|x|``.

    Attributes:
        bits: Bits per component: 1 (the sign).
        per_row: One scale per row instead of one for the message.
    """

    name: ClassVar[str] = "toy_sign"
    unbiased: ClassVar[bool] = False
    max_bits: ClassVar[int] = 1

    bits: int = 1
    per_row: bool = False

    def __post_init__(self) -> None:
        check_int("bits", self.bits, 1, 1)

    def message_bits(self, shape: Sequence[int]) -> int:
        """One bit per component, and 32 per scale."""
        rows, width = rows_of(check_shape(shape))
        return rows * width + SCALE_BITS * (rows if self.per_row else 1)

    def paper_bits(self, shape: Sequence[int]) -> int:
        """One bit per component."""
        return math.prod(check_shape(shape))

    def error_bound(self, x: torch.Tensor, *, scores: torch.Tensor | None = None) -> float:
        """The exact error (it is deterministic), with float32 rounding slack."""
        values = as_float32(x)
        rows, width = rows_of(values.shape)
        matrix = values.reshape(rows, width).astype(np.float64)
        scales = self._scales(matrix)
        error = float(((matrix - scales * _signs(matrix)) ** 2).sum())
        return error * (1 + 1e-5) + 1e-12

    def _scales(self, matrix: Floats) -> Floats:
        scales: Floats = np.abs(matrix).mean(axis=1, keepdims=True)
        if not self.per_row:
            scales = np.full((matrix.shape[0], 1), np.abs(matrix).mean())
        return scales

    def _encode(self, values: Array, *, seed: int, scores: torch.Tensor | None) -> bytes:
        rows, width = rows_of(values.shape)
        matrix = values.reshape(rows, width)
        scales = self._scales(matrix.astype(np.float64))[:, 0]
        kept = scales if self.per_row else scales[:1]
        return kept.astype("<f4").tobytes() + np.packbits(matrix.ravel() >= 0).tobytes()

    def _decode(self, payload: memoryview, shape: Shape, *, seed: int) -> Array:
        rows, width = rows_of(shape)
        count = rows if self.per_row else 1
        scales = np.frombuffer(payload[: 4 * count], dtype="<f4").reshape(count, 1)
        bits = np.unpackbits(np.frombuffer(payload[4 * count :], dtype=np.uint8))
        signs = bits[: rows * width].reshape(rows, width).astype(np.float32) * 2 - 1
        decoded: Array = (scales * signs).astype(np.float32)
        return decoded


def _signs(matrix: Floats) -> Floats:
    return np.where(matrix >= 0, 1.0, -1.0)


@contextmanager
def sign_compressor_registered() -> Iterator[type[SignCompressor]]:
    """``SignCompressor`` in the registry for the block, and out of it afterwards."""
    register_compressor(SignCompressor)
    try:
        yield SignCompressor
    finally:
        unregister_compressor(SignCompressor.name)
