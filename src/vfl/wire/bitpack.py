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
from vfl.wire import bitpack_kernels

MAX_BITS = 64
_WHOLE_BYTE_DTYPES = {bits: np.dtype(f"<u{bits // 8}") for bits in (8, 16, 32, 64)}
"""Widths whose packing is a little-endian integer array: one numpy cast, no bit arithmetic."""


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
    return pack_in_range(values, bits=bits)


def pack_in_range(codes: npt.NDArray[np.int64] | npt.NDArray[np.uint64], *, bits: int) -> bytes:
    """``pack_bits`` of a 1-D integer array the caller has checked: every code in ``[0, 2**bits)``.

    The message path's entry: it skips the checks ``pack_bits`` makes (a sender that has just
    measured its codes' range, as ``IdsField`` does, would pay for them twice) and packs whole-byte
    widths with one cast.
    """
    if codes.size == 0:
        return b""
    whole = _WHOLE_BYTE_DTYPES.get(bits)
    if whole is not None:
        return codes.astype(whole).tobytes()
    # codes < 2**bits <= 2**32: their int64 view is their value
    if bitpack_kernels.serves(bits, codes.size):
        return bitpack_kernels.pack_stream(codes.view(np.int64), bits)
    return _pack_numpy(codes.astype(np.uint64), bits)


def _pack_numpy(values: npt.NDArray[np.uint64], bits: int) -> bytes:
    """``pack_bits`` of checked ``values`` in numpy arithmetic (the reference of the loops).

    Widths that are whole bytes never come here: they are a cast (``pack_in_range``).
    """
    if 8 % bits == 0:  # 1, 2 or 4 bits: whole codes per byte
        return _pack_bytes(values, bits)
    per_word = _codes_per_word(bits)
    if per_word:
        return _pack_words(values, bits, per_word)
    return _pack_groups(values, bits)


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
    whole = _WHOLE_BYTE_DTYPES.get(bits)
    if whole is not None:
        return np.frombuffer(data, dtype=whole, count=count).astype(np.uint64)
    if bitpack_kernels.serves(bits, count):
        return bitpack_kernels.unpack_stream(data, bits, count).view(np.uint64)
    return _unpack_numpy(np.frombuffer(data, dtype=np.uint8), bits, count)


def unpack_ints(data: bytes | memoryview, *, bits: int, count: int) -> npt.NDArray[np.int64]:
    """``unpack_bits`` as ``int64``, for ``bits`` up to 63 (where every code fits), copied once.

    Raises:
        WireError: as ``unpack_bits``.
        ValueError: if ``bits`` is outside 1..63.
    """
    if not 1 <= bits < MAX_BITS:
        raise ValueError(f"int64 codes have 1..{MAX_BITS - 1} bits, got {bits}")
    if count and bitpack_kernels.serves(bits, count):  # the loop writes int64 and checks the length
        return bitpack_kernels.unpack_stream(data, bits, count)
    return unpack_bits(data, bits=bits, count=count).view(np.int64)


def _unpack_numpy(raw: npt.NDArray[np.uint8], bits: int, count: int) -> npt.NDArray[np.uint64]:
    """``unpack_bits`` of ``raw`` (the right size, ``count > 0``, not whole bytes) in numpy."""
    if 8 % bits == 0:
        return _unpack_bytes(raw, bits, count)
    per_word = _codes_per_word(bits)
    if per_word:
        return _unpack_words(raw, bits, count, per_word)
    return _unpack_groups(raw, bits, count)


def _pack_bytes(values: npt.NDArray[np.uint64], bits: int) -> bytes:
    """Pack ``8 / bits`` codes into each byte (``bits`` in 1, 2, 4), in uint8 arithmetic."""
    per = 8 // bits
    padded = np.zeros(-(-values.size // per) * per, dtype=np.uint8)
    padded[: values.size] = values
    packed = padded[0::per].copy()
    for k in range(1, per):
        packed |= padded[k::per] << np.uint8(k * bits)
    return packed.tobytes()


def _unpack_bytes(raw: npt.NDArray[np.uint8], bits: int, count: int) -> npt.NDArray[np.uint64]:
    """Inverse of ``_pack_bytes``."""
    per = 8 // bits
    mask = np.uint8((1 << bits) - 1)
    codes = np.empty(len(raw) * per, dtype=np.uint8)
    for k in range(per):  # strided slices: a broadcast (n, per) shift is many times slower
        codes[k::per] = (raw >> np.uint8(k * bits)) & mask
    if codes[count:].any():
        raise WireError("non-zero padding bits after the last code")
    unpacked: npt.NDArray[np.uint64] = codes[:count].astype(np.uint64)
    return unpacked


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
    packed = np.empty(len(words) * width, dtype=np.uint8)
    for j in range(width):  # byte j of every word, little-endian (strided, not a 2-D copy)
        packed[j::width] = words >> np.uint64(8 * j)
    return packed[: packed_size(values.size, bits)].tobytes()


def _unpack_words(
    raw: npt.NDArray[np.uint8], bits: int, count: int, per: int
) -> npt.NDArray[np.uint64]:
    """Inverse of ``_pack_words``: each group of bytes is one word holding ``per`` codes."""
    width, groups = per * bits // 8, -(-count // per)
    flat = np.zeros(groups * width, dtype=np.uint8)
    flat[: len(raw)] = raw
    words = flat[0::width].astype(np.uint64)
    for j in range(1, width):  # byte j of every word, little-endian (strided, not a 2-D copy)
        words |= flat[j::width].astype(np.uint64) << np.uint64(8 * j)
    mask = np.uint64((1 << bits) - 1)
    codes = np.empty(groups * per, dtype=np.uint64)
    for k in range(per):  # strided slices: a broadcast (groups, per) shift is many times slower
        codes[k::per] = (words >> np.uint64(k * bits)) & mask
    if codes[count:].any() or _dirty_tail(raw, count * bits):
        raise WireError("non-zero padding bits after the last code")
    return codes[:count]


def _dirty_tail(raw: npt.NDArray[np.uint8], used_bits: int) -> bool:
    """Whether bits after ``used_bits`` in the last byte are set."""
    return bool(used_bits % 8) and bool(int(raw[-1]) >> (used_bits % 8))


def _pack_groups(values: npt.NDArray[np.uint64], bits: int) -> bytes:
    """Pack each group of 8 codes into ``bits`` bytes through 64-bit words (any ``bits``).

    Code ``k`` of a group starts at bit ``k * bits``: in word ``k * bits // 64`` at shift
    ``k * bits % 64``, its high bits spilling into the next word when it crosses a boundary.
    """
    groups = -(-values.size // 8)
    padded = np.zeros(groups * 8, dtype=np.uint64)
    padded[: values.size] = values
    codes = padded.reshape(groups, 8)
    words = np.zeros((groups, -(-bits // 8) + 1), dtype="<u8")  # one spare word for the spill
    for k in range(8):
        word, shift = divmod(k * bits, 64)
        words[:, word] |= codes[:, k] << np.uint64(shift)
        if shift + bits > 64:
            words[:, word + 1] |= codes[:, k] >> np.uint64(64 - shift)
    packed = words.view(np.uint8).reshape(groups, -1)[:, :bits].reshape(-1)
    return packed[: packed_size(values.size, bits)].tobytes()


def _unpack_groups(raw: npt.NDArray[np.uint8], bits: int, count: int) -> npt.NDArray[np.uint64]:
    """Inverse of ``_pack_groups``: each group's ``bits`` bytes read as 64-bit words."""
    groups, width = -(-count // 8), -(-bits // 8)
    flat = np.zeros(groups * bits, dtype=np.uint8)
    flat[: len(raw)] = raw
    wide = np.zeros((groups, width * 8), dtype=np.uint8)
    wide[:, :bits] = flat.reshape(groups, bits)
    words = wide.view("<u8")
    codes = np.empty((groups, 8), dtype=np.uint64)
    mask = np.uint64((1 << bits) - 1) if bits < MAX_BITS else ~np.uint64(0)
    for k in range(8):
        word, shift = divmod(k * bits, 64)
        code = words[:, word] >> np.uint64(shift)
        if shift + bits > 64:
            code |= words[:, word + 1] << np.uint64(64 - shift)
        codes[:, k] = code & mask
    flat_codes: npt.NDArray[np.uint64] = codes.reshape(-1)
    if flat_codes[count:].any() or _dirty_tail(raw, count * bits):
        raise WireError("non-zero padding bits after the last code")
    return flat_codes[:count]


def _check_bits(bits: int) -> None:
    if not 1 <= bits <= MAX_BITS:
        raise ValueError(f"bits must be in 1..{MAX_BITS}, got {bits}")
