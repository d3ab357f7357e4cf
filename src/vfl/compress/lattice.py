"""2-D hexagonal (A2) lattice vector quantizer with subtractive dither.

C-VFL [ICML] Appendix B (docs/compression.md, the lattice codebook): components are taken in
consecutive pairs, each pair is scaled to the unit square and quantized to the nearest of
``2**(2b)`` codewords (``b`` bits per component), with a dither uniform over the hexagonal cell
that the receiver subtracts (UVeQFed, Shlezinger et al. 2021). The codebook is
``vfl.compress.hexagonal.hexagonal_codebook(b)``; ``docs/compression.md`` explains it.

Pairs are consecutive components of the row-major flattened tensor, so a ``(B, P)`` batch with
even ``P`` pairs columns ``(2i, 2i+1)`` of each row. When the tensor has an odd number of
components, one padding component at the middle of the range completes the last pair; its code
travels (``b`` bits per message) and the receiver drops it.

Away from the edges of the range (every component of the pair at least ``R = δ/√3`` range-widths
inside it) the error of a pair is uniform over the hexagon, independent of the input, with mean
squared error ``G(A2)·V`` per component; nearer the edges a dithered pair may fall outside the
codebook's cells (overload) and takes the nearest codeword, with error at most ``2R``.

Example:
    >>> import torch
    >>> q = LatticeQuantizer(bits=2)
    >>> c = q.compress(torch.tensor([[0.1, 0.4, 0.3, 0.7]]), seed=3)
    >>> len(c.payload), c.bits  # 8-byte range header, then two 4-bit pair codes in one byte
    (9, 72)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from vfl.compress import lattice_kernels
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
from vfl.compress.hexagonal import (
    G_A2,
    MAX_CODEBOOK_BITS,
    HexCodebook,
    cell_dither,
    hexagonal_codebook,
)
from vfl.compress.ranges import read_span, span_of
from vfl.errors import WireError
from vfl.wire.bitpack import pack_bits, unpack_bits

PAD_VALUE = 0.5
"""Where, in unit-square coordinates, the padding component of an odd-sized tensor sits."""


@dataclass(frozen=True, kw_only=True)
class LatticeQuantizer(Quantizer):
    """Hexagonal lattice quantizer, ``b`` bits per component (``b`` in 1..8).

    Payload: the optional 8-byte range header, then ``ceil(n / 2)`` codeword indices bit-packed
    at ``2b`` bits each, in pair order.
    """

    name: ClassVar[str] = "lattice"
    unbiased: ClassVar[bool] = False  # unbiased only away from the range's edges (see module)
    max_bits: ClassVar[int] = MAX_CODEBOOK_BITS

    @property
    def codebook(self) -> HexCodebook:
        """The codebook for ``bits`` (built once per process, then cached)."""
        return hexagonal_codebook(self.bits)

    def cell_area(self, x: torch.Tensor) -> float:
        """``V``: the area of a lattice cell in the units of ``x`` (scaled by the range²)."""
        return self.codebook.cell_area * self.span(x).width ** 2

    def noise_mse(self, x: torch.Tensor) -> float:
        """``G(A2)·V``: expected squared error per component, away from the range's edges."""
        return G_A2 * self.cell_area(x)

    def message_bits(self, shape: Sequence[int]) -> int:
        """Header bits plus ``2b`` bits per pair of components (a lone last one is padded)."""
        return self.header_bits + _pairs(math.prod(check_shape(shape))) * 2 * self.bits

    def paper_bits(self, shape: Sequence[int]) -> int:
        """``b`` bits per component, no header, no padding (docs/compression.md, byte layouts)."""
        return math.prod(check_shape(shape)) * self.bits

    def error_bound(self, x: torch.Tensor, *, scores: torch.Tensor | None = None) -> float:
        """``Σ_pairs (2R·w + ||d|| + r)²``, ``w`` the range width, ``d`` a pair's clipping.

        Every point of the unit square lies within ``R`` of a codeword and the dither moves it by
        at most ``R``, so a pair's error never exceeds ``2R`` range-widths (``R`` away from the
        edges). [ICML] Appendix B states the mean, ``V·P/24`` per sample; the exact dithered mean
        is ``G(A2)·V`` per component (``noise_mse``). ``r`` bounds float32 rounding.
        """
        values = as_float32(x)
        span = span_of(values, self.low, self.high)[0]
        reach = 2.0 * self.codebook.covering_radius * span.width
        gaps = span.overshoot(values)
        if len(gaps) % 2:
            gaps = np.append(gaps, 0.0)
        slack = math.sqrt(2.0) * self._rounding_slack(span, reach)
        per_pair = reach + np.hypot(gaps[0::2], gaps[1::2]) + slack
        return float((per_pair**2).sum())

    def codes(self, c: Compressed) -> Codes:
        """The codeword indices, one per pair, in ``0 .. codebook.size - 1``."""
        shape = check_shape(c.shape)
        self._check_length(c.payload, shape)
        return self._indices(read_span(memoryview(c.payload), self.low, self.high)[1], shape)

    def _encode(self, values: Array, *, seed: int, scores: torch.Tensor | None) -> bytes:
        span, header = span_of(values, self.low, self.high)
        codebook = self.codebook
        if lattice_kernels.available():
            flat = np.ascontiguousarray(values.reshape(-1))
            # The uniform draws cell_dither makes from the same seed.
            draws = np.random.default_rng(seed).random(2 * _pairs(len(flat)))
            indices = lattice_kernels.nearest_codes(codebook, flat, span, PAD_VALUE, draws)
            return header + lattice_kernels.pack_codes(indices, 2 * self.bits)
        unit = _padded(span.to_unit(values.reshape(-1)))
        ux, uy = cell_dither(np.random.default_rng(seed), len(unit) // 2, codebook.delta)
        indices = codebook.nearest(unit[0::2] + ux, unit[1::2] + uy)
        return header + pack_bits(indices.astype(np.uint64), bits=2 * self.bits)

    def _decode(self, payload: memoryview, shape: Shape, *, seed: int) -> Floats | Array:
        span, body = read_span(payload, self.low, self.high)
        indices = self._indices(body, shape)
        codebook = self.codebook
        if lattice_kernels.available():
            draws = np.random.default_rng(seed).random(2 * len(indices))
            return lattice_kernels.dithered_values(codebook, indices, span, draws, math.prod(shape))
        ux, uy = cell_dither(np.random.default_rng(seed), len(indices), codebook.delta)
        unit = np.empty(2 * len(indices))
        unit[0::2] = codebook.x[indices] - ux
        unit[1::2] = codebook.y[indices] - uy
        return span.from_unit(unit[: math.prod(shape)])

    def _indices(self, body: memoryview, shape: Shape) -> Codes:
        count = _pairs(math.prod(shape))
        if lattice_kernels.available():
            indices = lattice_kernels.unpack_codes(body, 2 * self.bits, count)
        else:
            indices = unpack_bits(body, bits=2 * self.bits, count=count).astype(np.int64)
        full = self.codebook.size == 1 << (2 * self.bits)  # then every code is a codeword
        if not full and int(indices.max()) >= self.codebook.size:
            raise WireError(
                f"lattice code {int(indices.max())} is not a codeword: the b={self.bits}"
                f" codebook has {self.codebook.size}"
            )
        return indices


def _pairs(count: int) -> int:
    return -(-count // 2)


def _padded(flat: Floats) -> Floats:
    """``flat`` with one ``PAD_VALUE`` appended when its length is odd."""
    return np.append(flat, PAD_VALUE) if len(flat) % 2 else flat
