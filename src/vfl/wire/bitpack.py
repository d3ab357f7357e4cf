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

import math

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
    per_word = _codes_per_word(bits)
    if per_word:
        return _pack_words(values, bits, per_word)
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
    per_word = _codes_per_word(bits)
    if per_word:
        return _unpack_words(raw, bits, count, per_word)
    if bits <= WINDOW_BITS:
        return _unpack_windows(raw, bits, count)
    stream = np.unpackbits(raw, bitorder="little")
    if stream[count * bits :].any():
        raise WireError("non-zero padding bits after the last code")
    grid = stream[: count * bits].reshape(count, bits).astype(np.uint64)
    codes: npt.NDArray[np.uint64] = (grid << np.arange(bits, dtype=np.uint64)).sum(
        axis=1, dtype=np.uint64
    )
    return codes


WINDOW_BITS = 57
"""Up to this width, a code and its bit offset within a byte fit one 64-bit window."""


def _codes_per_word(bits: int) -> int:
    """Codes per group that fills whole bytes of one 64-bit word (0 if no group fits)."""
    per = 8 // math.gcd(bits, 8)
    return per if per * bits <= 64 else 0


def _pack_words(values: npt.NDArray[np.uint64], bits: int, per: int) -> bytes:
    """Pack ``per`` codes into each group of ``per * bits / 8`` bytes, word by word."""
    padded = np.zeros(-(-values.size // per) * per, dtype=np.uint64)
    padded[: values.size] = values
    columns = padded.reshape(-1, per)
    words = columns[:, 0].copy()
    for k in range(1, per):
        words |= columns[:, k] << np.uint64(k * bits)
    width = per * bits // 8
    packed = words.astype("<u8").view(np.uint8).reshape(-1, 8)[:, :width].reshape(-1)
    return packed[: packed_size(values.size, bits)].tobytes()


def _unpack_words(
    raw: npt.NDArray[np.uint8], bits: int, count: int, per: int
) -> npt.NDArray[np.uint64]:
    """Inverse of ``_pack_words``: each group of bytes is one word holding ``per`` codes."""
    width, groups = per * bits // 8, -(-count // per)
    flat = np.zeros(groups * width, dtype=np.uint8)
    flat[: len(raw)] = raw
    wide = np.zeros((groups, 8), dtype=np.uint8)
    wide[:, :width] = flat.reshape(groups, width)
    shifts = np.arange(per, dtype=np.uint64) * np.uint64(bits)
    mask = np.uint64((1 << bits) - 1)
    codes: npt.NDArray[np.uint64] = ((wide.view("<u8") >> shifts) & mask).reshape(-1)
    if codes[count:].any() or _dirty_tail(raw, count * bits):
        raise WireError("non-zero padding bits after the last code")
    return codes[:count]


def _dirty_tail(raw: npt.NDArray[np.uint8], used_bits: int) -> bool:
    """Whether bits after ``used_bits`` in the last byte are set."""
    return bool(used_bits % 8) and bool(int(raw[-1]) >> (used_bits % 8))


def _unpack_windows(raw: npt.NDArray[np.uint8], bits: int, count: int) -> npt.NDArray[np.uint64]:
    """Read each code from the 64-bit little-endian window starting at its first byte."""
    offsets = np.arange(count, dtype=np.int64) * bits
    padded = np.zeros(len(raw) + 8, dtype=np.uint8)
    padded[: len(raw)] = raw
    windows = padded[(offsets // 8)[:, None] + np.arange(8)].copy().view("<u8").reshape(-1)
    mask = np.uint64((1 << bits) - 1)
    codes: npt.NDArray[np.uint64] = (windows >> (offsets % 8).astype(np.uint64)) & mask
    if _dirty_tail(raw, count * bits):
        raise WireError("non-zero padding bits after the last code")
    return codes


def _check_bits(bits: int) -> None:
    if not 1 <= bits <= MAX_BITS:
        raise ValueError(f"bits must be in 1..{MAX_BITS}, got {bits}")
