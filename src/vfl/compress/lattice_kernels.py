"""Fused, compiled loops for the lattice quantizer's hot path (numba, an optional extra).

The lattice quantizer's reference implementation is a chain of vectorised numpy passes
(``cell_dither``, ``lattice_coordinates``, the codebook's table lookup), each allocating a
temporary of the message's size. The two loops here do the same arithmetic, operation for
operation in the same order (IEEE double, no fast-math, no fused multiply-add), one pair at a
time, so their output is bit-identical to the reference; ``tests/compress/test_lattice_kernels.py``
checks that on random, tied and overloaded inputs.

Without numba (``pip install vfl[fast]`` adds it) ``AVAILABLE`` is False and the quantizer uses
the numpy reference.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from vfl.compress.hexagonal import SQRT3, HexCodebook

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

AVAILABLE = importlib.util.find_spec("numba") is not None
"""Whether the compiled loops can be used (numba is installed; it is imported on first use)."""


def _dithered_nearest(
    unit: Floats,
    draws: Floats,
    delta: float,
    shift_x: float,
    shift_y: float,
    table: Ints,
    i0: int,
    j0: int,
) -> tuple[Ints, Floats, Floats]:
    """Codebook index of each dithered pair, ``-1`` where the nearest lattice point is none.

    For pair ``k``: the dither from ``draws[k]`` and ``draws[count + k]`` as in ``cell_dither``,
    added to ``unit[2k], unit[2k + 1]``; the nearest point of the shifted lattice as in
    ``lattice_coordinates``; its index from the codebook's ``(j, i)`` table as in
    ``HexCodebook.nearest``. Also returns the dithered pairs (the overload fallback needs them).
    """
    count = len(draws) // 2
    rows, cols = table.shape
    flat = table.reshape(-1)
    scale_y = delta * SQRT3
    index = np.empty(count, dtype=np.int64)
    px = np.empty(count, dtype=np.float64)
    py = np.empty(count, dtype=np.float64)
    for k in range(count):
        a = draws[k] - 0.5
        b = draws[count + k] - 0.5
        corner = 0.5 if (abs(a) + 3.0 * abs(b)) > 1.0 else 0.0
        x = unit[2 * k] + delta * (a - math.copysign(corner, a))
        y = unit[2 * k + 1] + scale_y * (b - math.copysign(corner, b))
        px[k] = x
        py[k] = y
        ax = (x - shift_x) / delta
        ay = (y - shift_y) / scale_y
        a0 = np.rint(ax)
        c0 = np.rint(ay)
        a1 = np.floor(ax)
        c1 = np.floor(ay)
        first = (ax - a0) * (ax - a0) + 3.0 * ((ay - c0) * (ay - c0))
        da = ax - a1 - 0.5
        dc = ay - c1 - 0.5
        if da * da + 3.0 * (dc * dc) < first:
            i = int(a1 - c1) - i0
            j = int(2.0 * c1 + 1.0) - j0
        else:
            i = int(a0 - c0) - i0
            j = int(2.0 * c0) - j0
        row = min(max(j, 0), rows - 1)
        col = min(max(i, 0), cols - 1)
        index[k] = flat[row * cols + col]
    return index, px, py


def _dithered_points(indices: Ints, draws: Floats, cx: Floats, cy: Floats, delta: float) -> Floats:
    """Unit-square pairs ``codeword - dither``, interleaved, as the quantizer's decoder."""
    count = len(indices)
    scale_y = delta * SQRT3
    unit = np.empty(2 * count, dtype=np.float64)
    for k in range(count):
        a = draws[k] - 0.5
        b = draws[count + k] - 0.5
        corner = 0.5 if (abs(a) + 3.0 * abs(b)) > 1.0 else 0.0
        unit[2 * k] = cx[indices[k]] - delta * (a - math.copysign(corner, a))
        unit[2 * k + 1] = cy[indices[k]] - scale_y * (b - math.copysign(corner, b))
    return unit


@cache
def compiled() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The two loops compiled by numba (once per process; numba caches the machine code on disk).

    Raises:
        ImportError: if numba is not installed (check ``AVAILABLE`` first).
    """
    import numba

    jit = numba.njit(cache=True, nogil=True)
    return jit(_dithered_nearest), jit(_dithered_points)


def nearest_codes(codebook: HexCodebook, unit: Floats, draws: Floats) -> Ints:
    """The codeword index of each dithered pair of ``unit``, as ``HexCodebook.nearest`` gives.

    ``draws`` are ``cell_dither``'s uniform draws (``2 * pairs`` of them). Overloaded pairs, rare,
    go to the codebook's brute-force ``resolve_overload``.
    """
    table, i0, j0 = codebook.lookup
    shift_x, shift_y = codebook.shift
    index, x, y = compiled()[0](unit, draws, codebook.delta, shift_x, shift_y, table, i0, j0)
    return codebook.resolve_overload(index, x, y)


def dithered_codewords(codebook: HexCodebook, indices: Ints, draws: Floats) -> Floats:
    """The decoder's unit-square pairs ``codeword - dither``, interleaved."""
    unit: Floats = compiled()[1](indices, draws, codebook.x, codebook.y, codebook.delta)
    return unit
