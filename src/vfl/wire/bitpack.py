"""Bit-packing of unsigned integer codes: ``bits`` bits per code, little-endian bit order.

Code ``i`` occupies bits ``[i * bits, (i + 1) * bits)`` of the stream, where bit ``j`` of the
stream is bit ``j % 8`` of byte ``j // 8``; the last byte is zero-padded. So ``n`` codes of ``b``
bits take exactly ``ceil(n * b / 8)`` bytes (b = 2 packs 4 codes per byte).

Example:
    >>> import numpy as np
    >>> packed = pack_bits(np.array([1, 2, 3, 0]), bits=2)
    >>> len(packed), unpack_bits(packed, bits=2, count=4).tolist()
    (1, [1, 2, 3, 0])
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from vfl.errors import WireError

MAX_BITS = 64


def packed_size(count: int, bits: int) -> int:
    """Bytes that ``count`` codes of ``bits`` bits occupy."""
    return -(-count * bits // 8)


def pack_bits(codes: npt.ArrayLike, *, bits: int) -> bytes:
    """Pack non-negative integer codes, each ``< 2**bits``, into ``packed_size`` bytes.

    Raises:
        ValueError: if ``bits`` is outside 1..64 or a code does not fit in ``bits`` bits.
    """
    _check_bits(bits)
    values = np.asarray(codes).reshape(-1)
    if values.size == 0:
        return b""
    if values.dtype.kind not in "ui":
        raise ValueError(f"codes must be integers, got dtype {values.dtype}")
    if values.dtype.kind == "i" and values.min() < 0:
        raise ValueError(f"codes must be non-negative, got {int(values.min())}")
    values = values.astype(np.uint64)
    if bits < MAX_BITS and int(values.max()) >> bits:
        raise ValueError(f"code {int(values.max())} does not fit in {bits} bits")
    if bits % 8 == 0:  # whole bytes: a little-endian view is the packing
        width = bits // 8
        return values.astype("<u8").view(np.uint8).reshape(-1, 8)[:, :width].tobytes()
    shifts = np.arange(bits, dtype=np.uint64)
    stream = ((values[:, None] >> shifts) & np.uint64(1)).astype(np.uint8).reshape(-1)
    return np.packbits(stream, bitorder="little").tobytes()


def unpack_bits(data: bytes | memoryview, *, bits: int, count: int) -> npt.NDArray[np.uint64]:
    """Inverse of ``pack_bits``: ``count`` codes as ``uint64``.

    Raises:
        WireError: if ``data`` is not exactly ``packed_size(count, bits)`` bytes or the padding
            bits are not zero.
    """
    _check_bits(bits)
    expected = packed_size(count, bits)
    if len(data) != expected:
        raise WireError(f"{count} codes of {bits} bits need {expected} bytes, got {len(data)}")
    if count == 0:
        return np.zeros(0, dtype=np.uint64)
    raw = np.frombuffer(data, dtype=np.uint8)
    if bits % 8 == 0:
        width = bits // 8
        wide = np.zeros((count, 8), dtype=np.uint8)
        wide[:, :width] = raw.reshape(count, width)
        joined: npt.NDArray[np.uint64] = wide.view("<u8").reshape(-1).astype(np.uint64)
        return joined
    stream = np.unpackbits(raw, bitorder="little")
    if stream[count * bits :].any():
        raise WireError("non-zero padding bits after the last code")
    grid = stream[: count * bits].reshape(count, bits).astype(np.uint64)
    codes: npt.NDArray[np.uint64] = (grid << np.arange(bits, dtype=np.uint64)).sum(
        axis=1, dtype=np.uint64
    )
    return codes


def _check_bits(bits: int) -> None:
    if not 1 <= bits <= MAX_BITS:
        raise ValueError(f"bits must be in 1..{MAX_BITS}, got {bits}")
