"""LVFL communication lightweighting: zero the smallest-magnitude fraction of each upload.

LVFL (Wang et al., "Computation and Communication Efficient Lightweighting Vertical
Federated Learning", section IV, "Embedding Lightweighting"): party
``k`` sends its round-``t`` embedding with a fraction ``β_k^t`` of its entries zeroed,
unstructured over the whole ``(B, P)`` upload, smallest magnitudes first. Of ``n = B·P`` entries
exactly ``n - floor(β·n)`` are kept (``kept_entries``).

Payload (all integers little-endian), decodable without knowing the sender's schedule:

- ``u32`` K, the kept entries;
- ``u8`` the position layout: 0 dense (K = n, no positions), 1 a bitmap of ``n`` bits, 2 the
  K ascending flat indices bit-packed at ``ceil(log2 n)`` bits; the sender picks the smaller;
- the K kept values in flat order: float32, or the payload of a quantizer (``inner``) applied
  to the ``(K,)`` vector of kept values, so sparsification combines with scalar or lattice
  quantization.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

import numpy as np
import torch

from vfl.compress.codec import TensorCodec
from vfl.errors import ConfigError, WireError
from vfl.wire.bitpack import pack_bits, packed_size, unpack_bits

_HEADER = struct.Struct("<IB")
DENSE, BITMAP, INDICES = 0, 1, 2
_RATIO_SLACK = 1e-9  # floor(0.3 * 10) must be 3 although 0.3 * 10 = 2.9999999999999996


def kept_entries(total: int, ratio: float) -> int:
    """Entries kept of ``total`` when the fraction ``ratio`` (in ``[0, 1)``) is zeroed."""
    if not 0.0 <= ratio < 1.0:
        raise ConfigError(f"a sparsification ratio must lie in [0, 1), got {ratio}")
    return total - math.floor(ratio * total + _RATIO_SLACK)


def index_bits(total: int) -> int:
    """Bits of one flat index into ``total`` entries."""
    return max(1, math.ceil(math.log2(total))) if total > 1 else 1


class SparsifyingCodec:
    """A ``TensorCodec`` that sparsifies by magnitude, then encodes the kept values.

    Args:
        ratio_at: The fraction zeroed in a round (a party's ``β_k^t`` schedule). ``None`` for a
            decode-only codec (the server's): the payload says how many entries were kept.
        inner: Encodes the ``(K,)`` vector of kept values (a quantizer), or ``None`` for float32.
    """

    def __init__(
        self, ratio_at: Callable[[int], float] | None = None, inner: TensorCodec | None = None
    ) -> None:
        self._ratio_at = ratio_at
        self._inner = inner

    def encode(
        self, x: torch.Tensor, *, seed: int, round_: int, scores: torch.Tensor | None = None
    ) -> bytes:
        """The payload of ``x`` with the round's fraction of smallest-magnitude entries zeroed."""
        if self._ratio_at is None:
            raise ConfigError("this sparsifying codec only decodes: it has no ratio schedule")
        flat = x.detach().reshape(-1).to(device="cpu", dtype=torch.float32)  # the wire's copy
        total = flat.numel()
        kept = kept_entries(total, self._ratio_at(round_))
        if kept == total:
            return _HEADER.pack(kept, DENSE) + self._values(flat, seed, round_)
        # Stable descending sort: ties keep the lower index, so the kept set is reproducible.
        order = torch.argsort(flat.abs(), descending=True, stable=True)[:kept]
        positions = torch.sort(order).values.numpy()
        layout, packed = _positions(positions, total)
        return _HEADER.pack(kept, layout) + packed + self._values(flat[positions], seed, round_)

    def decode(
        self, payload: bytes, *, shape: tuple[int, ...], seed: int, round_: int
    ) -> torch.Tensor:
        """The dense float32 tensor of ``shape``, zeros where entries were dropped."""
        total = math.prod(shape)
        if len(payload) < _HEADER.size:
            raise WireError(f"sparse payload of {len(payload)} bytes is shorter than its header")
        kept, layout = _HEADER.unpack_from(payload)
        if kept > total:
            raise WireError(f"sparse payload keeps {kept} entries of a tensor with {total}")
        body = memoryview(payload)[_HEADER.size :]
        if layout == DENSE:
            if kept != total:
                raise WireError(f"dense sparse payload keeps {kept} of {total} entries")
            return self._decode_values(bytes(body), total, seed, round_).reshape(shape)
        size = _positions_size(layout, kept, total)
        if len(body) < size:
            raise WireError(f"sparse payload holds {len(body)} bytes, positions need {size}")
        positions = _read_positions(layout, body[:size], kept, total)
        values = self._decode_values(bytes(body[size:]), kept, seed, round_)
        dense = torch.zeros(total, dtype=torch.float32)
        dense[torch.from_numpy(positions)] = values
        return dense.reshape(shape)

    def _values(self, values: torch.Tensor, seed: int, round_: int) -> bytes:
        if self._inner is None:
            return values.numpy().astype("<f4").tobytes()
        if values.numel() == 0:
            return b""
        return self._inner.encode(values, seed=seed, round_=round_)

    def _decode_values(self, data: bytes, count: int, seed: int, round_: int) -> torch.Tensor:
        if self._inner is None or count == 0:
            if len(data) != 4 * count:
                raise WireError(f"{count} float32 values need {4 * count} bytes, got {len(data)}")
            return torch.from_numpy(np.frombuffer(data, dtype="<f4").astype(np.float32))
        return self._inner.decode(data, shape=(count,), seed=seed, round_=round_).reshape(-1)


def _positions(positions: np.ndarray, total: int) -> tuple[int, bytes]:
    """The cheaper layout for ascending ``positions`` and its bytes."""
    bits = index_bits(total)
    if packed_size(len(positions), bits) < packed_size(total, 1):
        return INDICES, pack_bits(positions.astype(np.uint64), bits=bits)
    mask = np.zeros(total, dtype=np.uint8)
    mask[positions] = 1
    return BITMAP, pack_bits(mask, bits=1)


def _positions_size(layout: int, kept: int, total: int) -> int:
    if layout == BITMAP:
        return packed_size(total, 1)
    if layout == INDICES:
        return packed_size(kept, index_bits(total))
    raise WireError(f"unknown sparse position layout {layout}; valid: 0, 1, 2")


def _read_positions(layout: int, data: memoryview, kept: int, total: int) -> np.ndarray:
    if layout == BITMAP:
        mask = unpack_bits(data, bits=1, count=total)
        positions = np.flatnonzero(mask)
        if len(positions) != kept:
            raise WireError(f"sparse bitmap marks {len(positions)} entries, header says {kept}")
        return positions.astype(np.int64)
    positions = unpack_bits(data, bits=index_bits(total), count=kept).astype(np.int64)
    if kept and (positions[-1] >= total or np.any(np.diff(positions) <= 0)):
        raise WireError(f"sparse indices must ascend strictly within 0..{total - 1}")
    return positions
