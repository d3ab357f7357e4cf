"""Geometry of the 2-D hexagonal lattice A2 and the finite codebook of the lattice quantizer.

Notation (C-VFL [ICML] Appendix B; docs/compression.md, the lattice codebook): the lattice
``δ·A2`` has the basis ``g1 = δ(1, 0)`` and ``g2 = δ(1/2, √3/2)``; its points are ``i·g1 +
j·g2`` for integers ``(i, j)``. Its Voronoi cell ``V0`` is a regular hexagon with inradius
``δ/2``, circumradius ``R = δ/√3`` (the covering radius) and area ``V = (√3/2)·δ²``. The
normalized second moment is ``G(A2) = 5/(36√3)``, so a dithered A2 quantizer has mean squared
error ``G·V`` per component (Zamir & Feder 1996).

The codebook of ``4**bits`` codewords for pairs scaled to the unit square ``S = [0, 1]²`` is
built by ``hexagonal_codebook``; ``docs/compression.md`` explains the construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import numpy.typing as npt

from vfl.errors import ConfigError

SQRT3 = math.sqrt(3.0)
G_A2 = 5.0 / (36.0 * SQRT3)
"""Normalized second moment of A2 (Conway & Sloane, SPLAG ch. 2): about 0.080188."""

MAX_CODEBOOK_BITS = 8
"""The largest ``bits`` per component (``4**8 = 65536`` codewords, 16-bit codes per pair)."""

_OFFSET_GRID = 8  # candidate lattice shifts per basis direction (64 in all)
_SCALE_MARGIN = 1e-6  # keeps every non-member clearly outside: membership is robust to rounding
_BRUTE_CHUNK = 4096  # overloaded points per brute-force block (bounds the temporary distance array)

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

_HEX_VERTICES = (
    np.array([[math.cos(a), math.sin(a)] for a in np.deg2rad(np.arange(30, 390, 60))]) / SQRT3
)  # V0 for δ = 1: vertices at radius 1/√3, at 30°, 90°, ..., 330°
_NORMALS = np.concatenate(
    [
        np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]),  # the square's edges
        np.array([[math.cos(a), math.sin(a)] for a in np.deg2rad(np.arange(0, 360, 60))]),
    ]
)  # the edge normals of the convex polygon S ⊕ V0 (Minkowski sums add edge normals)
_SUPPORT_SQUARE = 0.5 * np.abs(_NORMALS).sum(axis=1)  # support of [-1/2, 1/2]² along each normal
_SUPPORT_CELL = (_NORMALS @ _HEX_VERTICES.T).max(axis=1)  # support of V0 (δ = 1)
_NEIGHBOURS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, -1), (-1, 1))  # in (i, j) coordinates


def lattice_coordinates(x: Floats, y: Floats, delta: float) -> tuple[Ints, Ints]:
    """Integer coordinates ``(i, j)`` of the point of ``δ·A2`` nearest to each ``(x, y)``.

    A2 is the union of the rectangular lattice with spacing ``(δ, √3δ)`` and its translate by
    ``(δ/2, √3δ/2)``; the nearest point is the nearer of the two rectangular roundings
    (Conway & Sloane, SPLAG ch. 20). The point is ``(δ(i + j/2), δ(√3/2)j)``.
    """
    ax, ay = x / delta, y / (delta * SQRT3)
    a0, c0 = np.rint(ax), np.rint(ay)
    a1, c1 = np.floor(ax), np.floor(ay)  # the translate's candidate is (a1 + 1/2, c1 + 1/2)
    first = (ax - a0) ** 2 + 3.0 * (ay - c0) ** 2
    second = (ax - a1 - 0.5) ** 2 + 3.0 * (ay - c1 - 0.5) ** 2 < first
    c = np.where(second, c1, c0)
    i = (np.where(second, a1, a0) - c).astype(np.int64)
    j = (2.0 * c + second).astype(np.int64)
    return i, j


def cell_dither(rng: np.random.Generator, count: int, delta: float) -> tuple[Floats, Floats]:
    """``count`` dithers uniform over the Voronoi cell ``V0`` of ``δ·A2``, as ``(ux, uy)``.

    A point uniform on the rectangle ``[-δ/2, δ/2) × [-√3δ/2, √3δ/2)`` (a cell of the index-2
    rectangular sublattice, so two A2 cells' worth) reduced modulo A2 is uniform on ``V0``
    (the UVeQFed dither, Shlezinger et al. 2021). In that rectangle the nearest A2 point is
    the origin or the corner ``(±δ/2, ±√3δ/2)`` of the point's quadrant, and the corner is nearer
    exactly when ``|ux|/δ + 3·|uy|/(√3δ) > 1``.

    The draws are ``rng.random(2 * count)``: the first half scales to ``ux``, the second to ``uy``.
    """
    draws = rng.random(2 * count) - 0.5
    a, b = draws[:count], draws[count:]
    corner = 0.5 * ((np.abs(a) + 3.0 * np.abs(b)) > 1.0)
    return delta * (a - np.copysign(corner, a)), (delta * SQRT3) * (b - np.copysign(corner, b))


@dataclass(frozen=True, eq=False)
class HexCodebook:
    """The codewords of the lattice quantizer for pairs scaled to the unit square.

    Attributes:
        bits: Bits per component; codes have ``2 * bits`` bits.
        delta: The lattice scale δ (minimum distance between codewords), unit-square units.
        shift: The lattice translation: codewords are ``shift + i·g1 + j·g2``.
        x: Codeword abscissae, ordered by ``(j, i)``; at most ``4**bits`` of them.
        y: Codeword ordinates, in the same order.
    """

    bits: int
    delta: float
    shift: tuple[float, float]
    x: Floats = field(repr=False)
    y: Floats = field(repr=False)
    _table: Ints = field(repr=False)  # (j - j0, i - i0) -> index; -1 outside, and on the border
    _origin: tuple[int, int] = field(repr=False)  # (i0, j0)
    _boundary: Ints = field(repr=False)  # codewords with a lattice neighbour outside the codebook

    @property
    def size(self) -> int:
        """Number of codewords actually used (at most ``4**bits``)."""
        return len(self.x)

    @property
    def points(self) -> Floats:
        """The codewords as rows ``(size, 2)``."""
        return np.stack([self.x, self.y], axis=1)

    @property
    def cell_area(self) -> float:
        """``V``: the area of a lattice cell, ``(√3/2)·δ²`` (unit-square units)."""
        return (SQRT3 / 2) * self.delta**2

    @property
    def covering_radius(self) -> float:
        """``R = δ/√3``: the largest distance from a point of a cell to its codeword."""
        return self.delta / SQRT3

    def nearest(self, x: Floats, y: Floats) -> Ints:
        """Index of the codeword nearest to each point ``(x[k], y[k])``.

        Inside the codebook's region this is the lattice's nearest point (O(1) per point); a
        point whose nearest lattice point is not a codeword (overload) goes to
        ``resolve_overload``.
        """
        i, j = lattice_coordinates(x - self.shift[0], y - self.shift[1], self.delta)
        rows, cols = self._table.shape
        row = np.clip(j - self._origin[1], 0, rows - 1)
        col = np.clip(i - self._origin[0], 0, cols - 1)  # off the table lands on the -1 border
        index: Ints = self._table.take(row * cols + col)
        return self.resolve_overload(index, x, y)

    @property
    def lookup(self) -> tuple[Ints, int, int]:
        """The ``(j - j0, i - i0)`` index table (``-1`` off the codebook) and ``(i0, j0)``."""
        return self._table, self._origin[0], self._origin[1]

    def resolve_overload(self, index: Ints, x: Floats, y: Floats) -> Ints:
        """``index`` with every ``-1`` (a point whose lattice point is no codeword) filled in.

        Such a point is matched by brute force over the boundary codewords, the only ones whose
        cells reach outside the codebook's region. ``index`` is modified in place.
        """
        missed = np.flatnonzero(index < 0)
        for start in range(0, len(missed), _BRUTE_CHUNK):
            at = missed[start : start + _BRUTE_CHUNK]
            dx = x[at, None] - self.x[None, self._boundary]
            dy = y[at, None] - self.y[None, self._boundary]
            index[at] = self._boundary[(dx * dx + dy * dy).argmin(axis=1)]
        return index


def _thresholds(q: Floats) -> Floats:
    """Largest scale δ at which each lattice point ``c + δ·q`` still lies in ``S ⊕ δ·V0``.

    ``c + δq ∈ S ⊕ δV0`` iff ``δ·(n·q - h_V0(n)) <= h_S(n)`` for every edge normal ``n`` of the
    sum, so membership holds exactly for ``δ <= min_n h_S(n) / (n·q - h_V0(n))`` over the normals
    with a positive denominator: membership shrinks monotonically as δ grows.
    """
    slope = q @ _NORMALS.T - _SUPPORT_CELL  # (points, normals)
    with np.errstate(divide="ignore"):
        limits = np.where(slope > 0, _SUPPORT_SQUARE / np.where(slope > 0, slope, 1.0), np.inf)
    bound: Floats = limits.min(axis=1)
    return bound


def _candidates(offset: tuple[float, float], reach: float) -> tuple[Floats, Ints, Ints]:
    """Lattice points ``offset + λ`` (δ = 1 units) with ``|q|∞ <= reach``, and their ``(i, j)``."""
    rows = math.ceil(reach / (SQRT3 / 2)) + 2
    cols = math.ceil(reach + rows / 2) + 2
    jj, ii = np.meshgrid(np.arange(-rows, rows + 1), np.arange(-cols, cols + 1), indexing="ij")
    i, j = ii.reshape(-1), jj.reshape(-1)
    q = np.stack([offset[0] + i + 0.5 * j, offset[1] + (SQRT3 / 2) * j], axis=1)
    keep = np.abs(q).max(axis=1) <= reach
    return q[keep], i[keep], j[keep]


def _scale_for(offset: tuple[float, float], count: int, reach: float) -> float:
    """Smallest δ (plus a margin) at which at most ``count`` shifted lattice points qualify."""
    descending = -_thresholds(_candidates(offset, reach)[0])
    return float(-np.partition(descending, count)[count]) * (1.0 + _SCALE_MARGIN)


@cache
def hexagonal_codebook(bits: int) -> HexCodebook:
    """The lattice quantizer's codebook: at most ``4**bits`` points of a scaled, shifted A2.

    The codewords are the lattice points whose Voronoi cells meet the unit square, i.e. the points
    of ``S ⊕ V0``, so every point of the square lies in a codeword's cell (the undithered
    quantizer never overloads). Among 64 lattice shifts, the one admitting the smallest δ with at
    most ``4**bits`` such points is kept (the first on ties). Deterministic: sender and receiver
    build the same codebook. See ``docs/compression.md`` for the resulting δ and V per ``bits``.

    Raises:
        ConfigError: if ``bits`` is not in ``1..MAX_CODEBOOK_BITS``.
    """
    if not 1 <= bits <= MAX_CODEBOOK_BITS:
        raise ConfigError(f"lattice bits must be in 1..{MAX_CODEBOOK_BITS}, got {bits}")
    count = 4**bits
    smallest = math.sqrt(2.0 / (SQRT3 * count))  # count cells of area V must cover area 1
    reach = 0.5 / smallest + 1.0  # any member has |q|∞ <= 1/(2δ) + 1/√3
    shifts = [
        (float(a + 0.5 * c), float((SQRT3 / 2) * c))
        for a in np.arange(_OFFSET_GRID) / _OFFSET_GRID
        for c in np.arange(_OFFSET_GRID) / _OFFSET_GRID
    ]
    scales = [_scale_for(s, count, reach) for s in shifts]
    best = min(scales)
    chosen = next(k for k, s in enumerate(scales) if s <= best * (1.0 + 1e-9))
    return _build(bits, scales[chosen], shifts[chosen], reach)


def _build(bits: int, delta: float, offset: tuple[float, float], reach: float) -> HexCodebook:
    q, i, j = _candidates(offset, reach)
    member = _thresholds(q) >= delta
    q, i, j = q[member], i[member], j[member]
    order = np.lexsort((i, j))
    q, i, j = q[order], i[order], j[order]
    i0, j0 = int(i.min()) - 1, int(j.min()) - 1  # a border of -1 all round
    table = np.full((int(j.max()) - j0 + 2, int(i.max()) - i0 + 2), -1, dtype=np.int64)
    table[j - j0, i - i0] = np.arange(len(q))
    open_side = np.zeros(len(q), dtype=bool)
    for di, dj in _NEIGHBOURS:
        open_side |= table[j - j0 + dj, i - i0 + di] < 0
    shift = (float(0.5 + delta * offset[0]), float(0.5 + delta * offset[1]))
    return HexCodebook(
        bits=bits,
        delta=delta,
        shift=shift,
        x=0.5 + delta * q[:, 0],
        y=0.5 + delta * q[:, 1],
        _table=table,
        _origin=(i0, j0),
        _boundary=np.flatnonzero(open_side),
    )
