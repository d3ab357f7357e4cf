"""No compression: the float32 values themselves (C-VFL's b = 32 baseline, spec section 3).

Example:
    >>> import torch
    >>> c = Identity().compress(torch.tensor([1.0, -2.5]), seed=0)
    >>> len(c.payload), Identity().decompress(c, seed=0).tolist()
    (8, [1.0, -2.5])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from vfl.compress.base import Array, Compressor, Shape, as_float32, check_shape

BITS = 32


@dataclass(frozen=True)
class Identity(Compressor):
    """Sends every component as a little-endian float32 (``4·n`` bytes, no header)."""

    name: ClassVar[str] = "identity"
    unbiased: ClassVar[bool] = True
    lossless: ClassVar[bool] = True

    def message_bits(self, shape: Sequence[int]) -> int:
        """32 bits per component."""
        return BITS * math.prod(check_shape(shape))

    def paper_bits(self, shape: Sequence[int]) -> int:
        """32 bits per component: the same as the payload."""
        return self.message_bits(shape)

    def error_bound(self, x: torch.Tensor, *, scores: torch.Tensor | None = None) -> float:
        """Zero: the float32 tensor arrives unchanged."""
        as_float32(x)
        return 0.0

    def _encode(self, values: Array, *, seed: int, scores: torch.Tensor | None) -> bytes:
        return values.astype("<f4", copy=False).tobytes()

    def _decode(self, payload: memoryview, shape: Shape, *, seed: int) -> Array:
        return np.frombuffer(payload, dtype="<f4").copy()
