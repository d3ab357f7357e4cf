"""Fused, compiled loops for the lattice quantizer's hot path (numba, an optional extra).

The lattice quantizer's reference implementation is a chain of vectorised numpy passes
(``cell_dither``, ``lattice_coordinates``, the codebook's table lookup), each allocating a
temporary of the message's size. The compiled functions here do the same arithmetic, operation
for operation in the same order (IEEE double, no fast-math, no fused multiply-add), so their
output is bit-identical to the reference; ``tests/compress/test_lattice_kernels.py`` checks that
on random, tied, overloaded and far-outside inputs. The encoder runs as three loops, the first
two free of data-dependent branches so that LLVM vectorises them; the decoder as one.

Without numba (``pip install vfl[fast]`` adds it) ``available()`` is False and the quantizer uses
the numpy reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from vfl import jit
from vfl.compress.hexagonal import SQRT3, HexCodebook
from vfl.compress.ranges import Array, Span
from vfl.wire import bitpack_kernels

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


def available() -> bool:
    """Whether the compiled loops can run (numba installed and importing; see ``vfl.jit``)."""
    return jit.usable()


def _dithered_nearest(
    values: Floats | Array,
    low: float,
    scale: float,
    pad: float,
    draws: Floats,
    delta: float,
    shift_x: float,
    shift_y: float,
    table: Ints,
    i0: int,
    j0: int,
) -> tuple[Ints, Floats, Floats, int]:
    """Codebook index of each dithered pair, ``-1`` where the nearest lattice point is none.

    For pair ``k``: components ``2k`` and ``2k + 1`` of ``values`` scaled to the unit square as
    ``Span.to_unit`` does (``(v - low) / scale`` clipped to ``[0, 1]``; a missing last component
    is ``pad``); the dither from ``draws[k]`` and ``draws[count + k]`` as in
    ``cell_dither``; the nearest point of the shifted lattice as in ``lattice_coordinates``; its
    index from the codebook's ``(j, i)`` table as in ``HexCodebook.nearest``. Also returns the
    dithered pairs and how many pairs missed the table (the overload fallback needs them).
    """
    count = len(draws) // 2
    size = len(values)
    scale_y = delta * SQRT3
    px = np.empty(count, dtype=np.float64)
    py = np.empty(count, dtype=np.float64)
    ax = np.empty(count, dtype=np.float64)
    ay = np.empty(count, dtype=np.float64)
    # Three loops. The first two have no branches that depend on the data (the clips and the
    # corner are selects), so LLVM vectorises them, divisions included; only the nearest-point
    # loop below branches.
    unit = np.empty(2 * count, dtype=np.float64)
    for n in range(size):
        u = (float(values[n]) - low) / scale
        unit[n] = 0.0 if u < 0.0 else (1.0 if u > 1.0 else u)  # np.clip, which keeps -0.0
    if size % 2:
        unit[size] = pad
    for k in range(count):
        a = draws[k] - 0.5
        b = draws[count + k] - 0.5
        corner = 0.5 if (abs(a) + 3.0 * abs(b)) > 1.0 else 0.0
        px[k] = unit[2 * k] + delta * (a - math.copysign(corner, a))
        py[k] = unit[2 * k + 1] + scale_y * (b - math.copysign(corner, b))
        ax[k] = (px[k] - shift_x) / delta
        ay[k] = (py[k] - shift_y) / scale_y
    rows, cols = table.shape
    flat = table.reshape(-1)
    index = np.empty(count, dtype=np.int64)
    missed = 0
    for k in range(count):
        a0 = np.rint(ax[k])
        c0 = np.rint(ay[k])
        a1 = np.floor(ax[k])
        c1 = np.floor(ay[k])
        first = (ax[k] - a0) * (ax[k] - a0) + 3.0 * ((ay[k] - c0) * (ay[k] - c0))
        da = ax[k] - a1 - 0.5
        dc = ay[k] - c1 - 0.5
        if da * da + 3.0 * (dc * dc) < first:
            i = int(a1 - c1) - i0
            j = int(2.0 * c1 + 1.0) - j0
        else:
            i = int(a0 - c0) - i0
            j = int(2.0 * c0) - j0
        row = min(max(j, 0), rows - 1)
        col = min(max(i, 0), cols - 1)
        index[k] = flat[row * cols + col]
        missed += index[k] < 0
    return index, px, py, missed


def _dithered_points(
    indices: Ints,
    draws: Floats,
    cx: Floats,
    cy: Floats,
    delta: float,
    low: float,
    width: float,
    size: int,
) -> Array:
    """The decoder's float32 values: ``low + width * (codeword - dither)``, ``size`` of them.

    The same operations as the numpy decoder followed by ``Span.from_unit`` and the cast to
    float32 (the padding component of an odd ``size`` is dropped).
    """
    count = len(indices)
    scale_y = delta * SQRT3
    out = np.empty(2 * count, dtype=np.float32)
    for k in range(count):  # no data-dependent branch: vectorised
        a = draws[k] - 0.5
        b = draws[count + k] - 0.5
        corner = 0.5 if (abs(a) + 3.0 * abs(b)) > 1.0 else 0.0
        out[2 * k] = low + width * (cx[indices[k]] - delta * (a - math.copysign(corner, a)))
        out[2 * k + 1] = low + width * (cy[indices[k]] - scale_y * (b - math.copysign(corner, b)))
    return out[:size]


@cache
def compiled() -> tuple[Callable[..., Any], ...]:
    """The encoder and the decoder, compiled by numba once per process.

    numba also caches the machine code on disk, so a new process loads it instead of compiling.

    Raises:
        ImportError: if numba is not installed (check ``available()`` first).
    """
    return jit.njit(_dithered_nearest, _dithered_points)


def nearest_codes(
    codebook: HexCodebook, values: Floats | Array, span: Span, pad: float, draws: Floats
) -> Ints:
    """The codeword index of each dithered pair of ``values`` in ``span``, as the numpy path gives.

    ``values`` are flat (an odd count takes ``pad`` as its last unit-square component);
    ``draws`` are ``cell_dither``'s uniform draws (``2 * pairs`` of them). Overloaded pairs,
    rare, go to the codebook's brute-force ``resolve_overload``.
    """
    table, i0, j0 = codebook.lookup
    shift_x, shift_y = codebook.shift
    index, x, y, missed = compiled()[0](
        values,
        span.low,
        span.width or 1.0,
        pad,
        draws,
        codebook.delta,
        shift_x,
        shift_y,
        table,
        i0,
        j0,
    )
    return codebook.resolve_overload(index, x, y) if missed else index


def dithered_values(
    codebook: HexCodebook, indices: Ints, span: Span, draws: Floats, size: int
) -> Array:
    """The decoder's ``size`` float32 values: ``codeword - dither`` scaled back to ``span``."""
    values: Array = compiled()[1](
        indices, draws, codebook.x, codebook.y, codebook.delta, span.low, span.width, size
    )
    return values


def pack_codes(codes: Ints, bits: int) -> bytes:
    """The bytes ``vfl.wire.bitpack.pack_bits(codes, bits=bits)`` gives (``bits`` in 1..16).

    The caller guarantees ``0 <= code < 2**bits`` (codebook indices do).
    """
    return bitpack_kernels.pack_stream(codes, bits)


def unpack_codes(body: memoryview, bits: int, count: int) -> Ints:
    """``count`` codes of ``bits`` bits (1..16) from ``body``, as ``unpack_bits`` reads them.

    Raises:
        WireError: if ``body`` is not exactly the packed size or a padding bit is set.
    """
    return bitpack_kernels.unpack_stream(body, bits, count)
