"""Bytes of masked count blocks: exactly k bits per value, bit-packed by ``vfl.wire.bitpack``.

A ``(B, P)`` block of values in ``Z_{2^k}`` travels as ``ceil(B P k / 8)`` bytes (values in C
order, code ``n`` at bits ``[n k, (n + 1) k)``, zero padding in the last byte). The receiver knows
the shape (from the round's request) and ``k`` (from the protocol parameters), so the payload
carries neither.

Example:
    >>> import numpy as np
    >>> block = np.array([[3, 0, 7], [1, 6, 2]], dtype=np.uint64)
    >>> data = encode_masked(block, bits=3)
    >>> len(data), decode_masked(data, shape=(2, 3), bits=3).tolist()
    (3, [[3, 0, 7], [1, 6, 2]])
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from vfl.secagg.masks import Counts, check_bits, num_values
from vfl.wire.bitpack import pack_bits, packed_size, unpack_bits


def masked_size(shape: tuple[int, ...], *, bits: int) -> int:
    """Payload bytes of a masked block: ``ceil(prod(shape) k / 8)``."""
    check_bits(bits)
    return packed_size(num_values(shape), bits)


def encode_masked(masked: npt.ArrayLike, *, bits: int) -> bytes:
    """Pack a block of masked values (each in ``0..2^k - 1``) at exactly ``k`` bits each.

    Raises:
        ConfigError: if ``bits`` is outside 1..64.
        ValueError: if a value is negative, not an integer, or does not fit in ``k`` bits.
    """
    check_bits(bits)
    return pack_bits(np.asarray(masked), bits=bits)


def decode_masked(data: bytes | memoryview, *, shape: tuple[int, ...], bits: int) -> Counts:
    """Inverse of ``encode_masked``: a ``uint64`` block of ``shape``.

    Raises:
        ConfigError: if ``bits`` or ``shape`` is invalid.
        WireError: if ``data`` is not exactly ``masked_size(shape, bits=bits)`` bytes or its
            padding bits are not zero (a non-canonical encoding).
    """
    check_bits(bits)
    count = num_values(shape)
    return unpack_bits(data, bits=bits, count=count).reshape(shape)
