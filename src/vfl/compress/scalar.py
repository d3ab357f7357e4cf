"""Uniform scalar quantizer with ``2**b`` levels and subtractive dither.

C-VFL [ICML] Appendix B (the layout in docs/compression.md). Levels sit at ``low + k·Δ`` for
``k = 0 .. L-1`` with ``L = 2**b`` and ``Δ = (high - low) / (L - 1)``: the range's ends are levels
(the paper leaves placement UNSPECIFIED; this is the authors' code's choice). The sender adds a
dither ``u ~ U[-Δ/2, Δ/2)`` drawn from ``seed``, rounds to the nearest level and sends its index
``k``; the receiver rebuilds ``low + k·Δ - u``. For inputs in the range the error is then exactly
uniform on ``[-Δ/2, Δ/2]``, independent of the input (Schuchman 1964; Wannamaker 1997; spec
section 5.7, check 1), with mean squared error ``Δ²/12`` per component. Because the end levels
are the range's ends, ``x + u`` never leaves the levels' cells: no overload inside the range.

Example:
    >>> import torch
    >>> q = ScalarQuantizer(bits=2, low=-1.0, high=1.0)
    >>> c = q.compress(torch.tensor([[-1.0, 0.2, 0.9, 1.0]]), seed=7)
    >>> len(c.payload), c.bits  # four 2-bit codes in one byte; a fixed range needs no header
    (1, 8)
    >>> bool((q.decompress(c, seed=7) - torch.tensor([[-1.0, 0.2, 0.9, 1.0]])).abs().max() <= 1/3)
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from vfl.compress.base import (
    Array,
    Codes,
    Compressed,
    Floats,
    Quantizer,
    Shape,
    as_float32,
    check_shape,
)
from vfl.compress.ranges import read_span, span_of
from vfl.errors import ConfigError
from vfl.wire.bitpack import pack_bits, unpack_bits


@dataclass(frozen=True, kw_only=True)
class ScalarQuantizer(Quantizer):
    """Per-component uniform quantizer, ``b`` bits per component (``b`` in 1..16).

    Payload: the optional 8-byte range header, then the ``n`` level indices bit-packed at ``b``
    bits each (``vfl.wire.bitpack``), in row-major order.
    """

    name: ClassVar[str] = "scalar"
    unbiased: ClassVar[bool] = True
    max_bits: ClassVar[int] = 16

    @property
    def levels(self) -> int:
        """``L = 2**b``."""
        return 1 << self.bits

    def step(self, x: torch.Tensor) -> float:
        """``Δ``, the distance between levels, for ``x`` (fixed range: the same for every x)."""
        return self.span(x).width / (self.levels - 1)

    def noise_mse(self, x: torch.Tensor) -> float:
        """``Δ²/12``: the expected squared error per component for ``x`` inside the range."""
        return self.step(x) ** 2 / 12.0

    def message_bits(self, shape: Sequence[int]) -> int:
        """Header bits plus ``b`` bits per component."""
        return self.header_bits + math.prod(check_shape(shape)) * self.bits

    def paper_bits(self, shape: Sequence[int]) -> int:
        """``b`` bits per component, no header (docs/compression.md, byte layouts)."""
        return math.prod(check_shape(shape)) * self.bits

    def error_bound(self, x: torch.Tensor, *, scores: torch.Tensor | None = None) -> float:
        """``Σ_i (Δ/2 + d_i + r)²``: ``d_i`` is the clipping distance of ``x_i`` (0 in range).

        The dithered error of an in-range component never exceeds ``Δ/2``, so the sum is at most
        ``n·Δ²/4`` in range ([ICML] Appendix B states the mean, ``n·Δ²/12``). ``r`` bounds the
        float32 rounding of the output.
        """
        values = as_float32(x)
        span = span_of(values, self.low, self.high)[0]
        half = 0.5 * span.width / (self.levels - 1)
        per_component = half + span.overshoot(values) + self._rounding_slack(span, half)
        return float((per_component**2).sum())

    def codes(self, c: Compressed) -> Codes:
        """The level indices ``k`` in ``0 .. 2**b - 1``, one per component, row-major."""
        shape = check_shape(c.shape)
        self._check_length(c.payload, shape)
        body = read_span(memoryview(c.payload), self.low, self.high)[1]
        return unpack_bits(body, bits=self.bits, count=math.prod(shape)).astype(np.int64)

    def _encode(self, values: Array, *, seed: int, scores: torch.Tensor | None) -> bytes:
        span, header = span_of(values, self.low, self.high)
        top = self.levels - 1
        shifted = span.to_unit(values.reshape(-1)) * top + _dither(seed, values.size)
        codes = np.clip(np.rint(shifted), 0, top).astype(np.uint64)
        return header + pack_bits(codes, bits=self.bits)

    def _decode(self, payload: memoryview, shape: Shape, *, seed: int) -> Floats:
        span, body = read_span(payload, self.low, self.high)
        count = math.prod(shape)
        codes = unpack_bits(body, bits=self.bits, count=count).astype(np.float64)
        return span.from_unit((codes - _dither(seed, count)) / (self.levels - 1))


def _dither(seed: int, count: int) -> Floats:
    """``count`` dithers uniform on ``[-1/2, 1/2)`` level steps, from ``seed`` alone."""
    dither: Floats = np.random.default_rng(seed).random(count) - 0.5
    return dither


def scalar_bits_for_error(*, num_components: int, value_range: float, target: float) -> int:
    """Fewest bits whose dithered scalar quantizer has expected error ``ℰ <= target``.

    C-VFL's Table 1 (Castiglia et al., ICML 2022) inverted exactly for this module's levels: with
    ``n`` components, ``ℰ = n·Δ²/12`` and ``Δ = range / (2^b - 1)``, so
    ``b = ceil(log2(1 + range·sqrt(n / (12·target))))``. For a diminishing error use
    ``target = c/√t``.

    Raises:
        ConfigError: if an argument is not positive.
    """
    if num_components < 1 or not value_range > 0 or not target > 0:
        raise ConfigError(
            f"need num_components >= 1, value_range > 0 and target > 0, got {num_components},"
            f" {value_range}, {target}"
        )
    bits = max(
        1, math.ceil(math.log2(1.0 + value_range * math.sqrt(num_components / (12 * target))))
    )
    while bits > 1 and _scalar_error(num_components, value_range, bits - 1) <= target:
        bits -= 1  # guard against log2 rounding up past an exact fit
    while _scalar_error(num_components, value_range, bits) > target:
        bits += 1
    return bits


def _scalar_error(num_components: int, value_range: float, bits: int) -> float:
    return num_components * (value_range / ((1 << bits) - 1)) ** 2 / 12.0
