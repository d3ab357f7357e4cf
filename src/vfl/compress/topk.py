"""Top-k sparsification: send ``k`` of the ``P`` components of each embedding, zero the rest.

C-VFL [ICML] Appendix B (after Lin et al. 2018; the layout in docs/compression.md). By default
``k = ceil(P·b/32)``, so the kept float32 values weigh about ``b`` bits per component; ``k`` or a
``ratio`` can be set instead. The selection key is the magnitude of ``x`` or, as in the paper, the
magnitude of ``scores`` (the previous step's gradient with respect to the embedding).

Selection sets: one column set shared by the whole ``(B, P)`` batch (the authors' code), or one
set per row (``per_row=True``). A flat ``(N,)`` vector is a single row. The indices travel,
bit-packed at ``ceil(log2 P)`` bits each; ``paper_bits`` gives the paper's indices-free figure.

Error ([ICML] Table 1): with magnitude selection the dropped mass is at most ``(1 - k/P)·||x||²``
(per row, and for a shared set ranked by column energy, over the batch); with ``scores`` only
``||x||²`` is guaranteed (spec section 5.7, check 3).

Example:
    >>> import torch
    >>> topk = TopK(k=1)
    >>> c = topk.compress(torch.tensor([[0.5, -3.0, 1.0]]), seed=0)
    >>> topk.decompress(c, seed=0).tolist(), len(c.payload)  # one float32 and one 2-bit index
    ([[0.0, -3.0, 0.0]], 5)
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
    Compressor,
    Floats,
    Shape,
    as_float32,
    check_shape,
    rows_of,
)
from vfl.errors import ConfigError, WireError
from vfl.schedules import check_int
from vfl.wire.bitpack import pack_bits, unpack_bits

VALUE_BITS = 32
_RATIO_SLACK = 1e-9  # ceil(0.07 * 100) must be 7, not 8 (0.07 * 100 = 7.000000000000001)


@dataclass(frozen=True, kw_only=True)
class TopK(Compressor):
    """Top-k sparsifier; give exactly one of ``bits``, ``k`` and ``ratio``.

    Payload: the kept values as little-endian float32 (row-major, ``B·k`` of them), then the
    indices bit-packed at ``ceil(log2 P)`` bits each, ascending within a set: ``k`` indices for a
    shared set, ``B·k`` (row by row) for per-row sets.

    Attributes:
        bits: Nominal bits per component ``b`` in 1..32: ``k = ceil(P·b/32)``.
        k: Components kept per row, at least 1 (``min(k, P)`` is used).
        ratio: Fraction kept, in (0, 1]: ``k = ceil(ratio·P)``.
        per_row: One index set per row instead of one shared by the batch.
    """

    name: ClassVar[str] = "topk"
    unbiased: ClassVar[bool] = False
    selects: ClassVar[bool] = True

    bits: int | None = None
    k: int | None = None
    ratio: float | None = None
    per_row: bool = False

    def __post_init__(self) -> None:
        given = [n for n in ("bits", "k", "ratio") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ConfigError(f"topk needs exactly one of bits, k, ratio; got {given or 'none'}")
        if self.bits is not None:
            check_int("bits", self.bits, 1, VALUE_BITS)
        if self.k is not None:
            check_int("k", self.k, 1, 2**62)
        if self.ratio is not None and not (
            isinstance(self.ratio, int | float) and 0 < self.ratio <= 1
        ):
            raise ConfigError(f"ratio must be a number in (0, 1], got {self.ratio!r}")
        if not isinstance(self.per_row, bool):
            raise ConfigError(f"per_row must be true or false, got {self.per_row!r}")

    def kept(self, width: int) -> int:
        """``k`` for rows of ``width`` components, between 1 and ``width``."""
        if self.bits is not None:
            return -(-width * self.bits // VALUE_BITS)
        if self.k is not None:
            return min(self.k, width)
        assert self.ratio is not None
        return max(1, min(width, math.ceil(self.ratio * width - _RATIO_SLACK)))

    def message_bits(self, shape: Sequence[int]) -> int:
        """``32·B·k`` value bits plus ``ceil(log2 P)`` bits per index (``k``, or ``B·k``)."""
        rows, width = rows_of(check_shape(shape))
        k = self.kept(width)
        sets = rows if self.per_row else 1
        return VALUE_BITS * rows * k + sets * k * index_bits(width)

    def paper_bits(self, shape: Sequence[int]) -> int:
        """Paper accounting, indices free: ``32·B·k`` (about ``b·B·P``). Not the payload size."""
        rows, width = rows_of(check_shape(shape))
        return VALUE_BITS * rows * self.kept(width)

    def error_bound(self, x: torch.Tensor, *, scores: torch.Tensor | None = None) -> float:
        """``(1 - k/P)·||x||²`` when selecting by magnitude, ``||x||²`` when by ``scores``."""
        values = as_float32(x).astype(np.float64)
        energy = float((values**2).sum())
        if scores is not None:
            return energy
        width = rows_of(values.shape)[1]
        return (1.0 - self.kept(width) / width) * energy

    def indices(self, x: torch.Tensor, *, scores: torch.Tensor | None = None) -> Codes:
        """The kept positions: ``(k,)`` for a shared set, ``(B, k)`` per row; ascending."""
        values = as_float32(x)
        rows, width = rows_of(values.shape)
        key = self._key(values.reshape(rows, width), scores)
        return _largest(key, self.kept(width))

    def _encode(self, values: Array, *, seed: int, scores: torch.Tensor | None) -> bytes:
        rows, width = rows_of(values.shape)
        matrix = values.reshape(rows, width)
        chosen = _largest(self._key(matrix, scores), self.kept(width))
        kept = np.take_along_axis(matrix, chosen, axis=1) if self.per_row else matrix[:, chosen]
        bits = index_bits(width)
        packed = pack_bits(chosen.astype(np.uint64), bits=bits) if bits else b""
        return kept.astype("<f4").tobytes() + packed

    def _decode(self, payload: memoryview, shape: Shape, *, seed: int) -> Array:
        rows, width = rows_of(shape)
        k = self.kept(width)
        split = 4 * rows * k
        kept = np.frombuffer(payload[:split], dtype="<f4").reshape(rows, k)
        chosen = self._read_indices(payload[split:], rows if self.per_row else 1, k, width)
        out = np.zeros((rows, width), dtype=np.float32)
        if self.per_row:
            np.put_along_axis(out, chosen, kept, axis=1)
        else:
            out[:, chosen[0]] = kept
        return out

    def _key(self, matrix: Array, scores: torch.Tensor | None) -> Floats:
        """Selection key: ``(P,)`` for a shared set, ``(B, P)`` per row; larger is kept first."""
        source = matrix.astype(np.float64)
        if scores is not None:
            source = _check_scores(scores, matrix.shape)
        if self.per_row:
            return np.broadcast_to(np.abs(source), matrix.shape)
        key: Floats = (source**2).sum(axis=0) if source.ndim == 2 else np.abs(source)
        return key  # column energy: ranks columns by their share of ||x||²

    @staticmethod
    def _read_indices(body: memoryview, sets: int, k: int, width: int) -> Codes:
        bits = index_bits(width)
        if not bits:
            return np.zeros((sets, k), dtype=np.int64)
        chosen = unpack_bits(body, bits=bits, count=sets * k).astype(np.int64).reshape(sets, k)
        if int(chosen.max()) >= width or (np.diff(chosen, axis=1) <= 0).any():
            raise WireError(f"top-k indices must be ascending positions below P={width}")
        return chosen


def index_bits(width: int) -> int:
    """``ceil(log2 P)``: bits per index for rows of ``P`` components (0 when ``P = 1``)."""
    return (width - 1).bit_length()


def _largest(key: Floats, k: int) -> Codes:
    """Ascending positions of the ``k`` largest entries along the last axis of ``key``."""
    width = key.shape[-1]
    if k >= width:
        full = np.broadcast_to(np.arange(width, dtype=np.int64), (*key.shape[:-1], width))
        return np.ascontiguousarray(full)
    chosen = np.argpartition(-key, k - 1, axis=-1)[..., :k]
    return np.sort(chosen, axis=-1).astype(np.int64)


def _check_scores(scores: torch.Tensor, shape: tuple[int, ...]) -> Floats:
    """``scores`` as float64, if shaped ``(P,)`` or like ``x`` (as rows) and finite."""
    if not isinstance(scores, torch.Tensor) or not scores.is_floating_point():
        raise ConfigError(f"scores must be a floating-point torch.Tensor, got {type(scores)}")
    rows, width = shape
    if tuple(scores.shape) not in ((width,), (rows, width)):
        raise ConfigError(
            f"scores must have shape ({width},) or the shape of x, got {tuple(scores.shape)}"
        )
    source: Floats = scores.detach().to(device="cpu", dtype=torch.float64).numpy()
    if not np.isfinite(source).all():
        raise ConfigError("scores must be finite")
    return source
