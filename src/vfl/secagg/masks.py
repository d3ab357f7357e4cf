"""Pairwise mask streams (ChaCha20) and the arithmetic mod 2^k that makes them cancel.

Notation (VFL-PBM paper §2.3, after Bonawitz et al. 2016): M parties with ids ``i``, each holding a
block of counts ``q_i`` in ``{0..b}`` of shape ``(B, P)``; ``k`` bits per value; ``s_ij`` the
32-byte seed of pair ``{i, j}`` (``vfl.secagg.keys``). The pair mask for round ``r`` and channel
``c`` is

    u_ij[n] = LE(keystream(s_ij, nonce(r, c))[n w : (n + 1) w]) mod 2^k,   w = ceil(k / 8),

for the flat (C-order) index ``n = i_sample * P + j_coord``, and party ``i`` sends

    y_i = q_i + sum_{j > i} u_ij - sum_{j < i} u_ij   (mod 2^k),

so ``sum_i y_i = sum_i q_i (mod 2^k)`` (Bonawitz et al. 2016, Protocol 0, with one mask per pair
and a sign instead of two masks ``u_ij - u_ji``: the same cancellation).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from vfl.errors import ConfigError

MAX_BITS = 64
MAX_ROUND = 2**64 - 1
MAX_CHANNEL = 2**32 - 1
_BLOCK_SIZE = 64
_MAX_STREAM_BYTES = 2**32 * _BLOCK_SIZE  # ChaCha20's 32-bit block counter must not wrap
_NONCE = struct.Struct("<IQI")

Counts = npt.NDArray[np.uint64]


def required_bits(*, num_parties: int, max_count: int) -> int:
    """The least k with ``M b < 2^k``, i.e. ``ceil(log2(M b + 1))`` (VFL-PBM paper §2.3 and §4).

    The true sum of M counts in ``{0..b}`` lies in ``{0..M b}``, so mod ``2^k`` it is recovered
    exactly (no wrap-around) iff ``M b <= 2^k - 1``.

    Example:
        >>> required_bits(num_parties=4, max_count=16), required_bits(num_parties=12, max_count=64)
        (7, 10)

    Raises:
        ConfigError: if ``num_parties < 2`` or ``max_count < 1``.
    """
    if num_parties < 2:
        raise ConfigError(f"secure aggregation needs at least 2 parties, got {num_parties}")
    if max_count < 1:
        raise ConfigError(f"max_count (PBM's b) must be >= 1, got {max_count}")
    return (num_parties * max_count).bit_length()


def check_bits(bits: int) -> None:
    """Refuse a modulus exponent outside 1..64 (values live in ``uint64``).

    Raises:
        ConfigError: naming ``bits``.
    """
    if not 1 <= bits <= MAX_BITS:
        raise ConfigError(f"bits (k) must be in 1..{MAX_BITS}, got {bits}")


def mask_nonce(*, round: int, channel: int = 0) -> bytes:
    """The 16-byte ChaCha20 nonce: ``u32 counter = 0 || u64 round || u32 channel``, little-endian.

    ``cryptography``'s ChaCha20 takes the RFC 8439 §2.3 state words 12-15 as one 16-byte value:
    a 32-bit block counter followed by a 96-bit nonce; we start the counter at 0 and let the
    96-bit nonce name the round and the channel (several masked vectors in one round).

    Raises:
        ConfigError: if ``round`` is outside 0..2^64-1 or ``channel`` outside 0..2^32-1.
    """
    if not 0 <= round <= MAX_ROUND:
        raise ConfigError(f"round must be in 0..{MAX_ROUND}, got {round}")
    if not 0 <= channel <= MAX_CHANNEL:
        raise ConfigError(f"channel must be in 0..{MAX_CHANNEL}, got {channel}")
    return _NONCE.pack(0, round, channel)


def pair_mask(
    seed: bytes, *, round: int, channel: int = 0, shape: tuple[int, ...], bits: int
) -> Counts:
    """The mask ``u_ij`` of one pair: ``prod(shape)`` uniform values in ``Z_{2^k}``.

    Value ``n`` (C order) is the little-endian integer in keystream bytes ``[n w, (n + 1) w)``
    with ``w = ceil(k / 8)``, reduced mod ``2^k``. Since ``2^k`` divides ``2^(8 w)``, a uniform
    ``w``-byte integer mod ``2^k`` is exactly uniform: its low k bits are k uniform bits.

    Raises:
        ConfigError: if ``bits``, ``round``, ``channel`` or ``shape`` is invalid, or the block
            needs more than ChaCha20's 2^32 blocks of keystream.
    """
    count, width = _layout(shape, bits)
    nonce = mask_nonce(round=round, channel=channel)
    values = _keystream_words(seed, nonce, count=count, width=width).astype(np.uint64)
    return reduce_mod(values, bits=bits).reshape(shape)


def apply_masks(
    counts: Counts,
    seeds: Mapping[int, bytes],
    *,
    party_id: int,
    round: int,
    channel: int = 0,
    bits: int,
) -> Counts:
    """``y_i = q_i + sum_{j > i} u_ij - sum_{j < i} u_ij (mod 2^k)`` for party ``i = party_id``.

    ``seeds`` maps every peer id ``j`` to the pair seed ``s_ij``; ``counts`` are ``uint64``
    values below ``2^k`` (the caller validates them). The result equals masking with
    ``pair_mask`` value by value.

    Raises:
        ConfigError: if ``seeds`` names the party itself, or as in ``pair_mask``.
    """
    if party_id in seeds:
        raise ConfigError(f"party {party_id} cannot hold a pair seed with itself")
    count, width = _layout(counts.shape, bits)
    nonce = mask_nonce(round=round, channel=channel)
    # Sum the raw w-byte words in a w-byte dtype, which wraps mod 2^(8w); 2^k divides 2^(8w), so
    # one reduction at the end gives the sum mod 2^k without widening every stream to uint64.
    masked = counts.reshape(-1).astype(_word_dtype(width))
    for peer_id, seed in seeds.items():
        words = _keystream_words(seed, nonce, count=count, width=width)
        if peer_id > party_id:
            masked += words
        else:
            masked -= words
    return reduce_mod(masked.astype(np.uint64), bits=bits).reshape(counts.shape)


def sum_mod(blocks: Iterable[Counts], *, bits: int) -> Counts:
    """The element-wise sum of ``uint64`` blocks of one shape, mod ``2^k``.

    Raises:
        ConfigError: if ``blocks`` is empty or ``bits`` is outside 1..64.
    """
    check_bits(bits)
    total: Counts | None = None
    for block in blocks:
        values = block.astype(np.uint64, copy=False)
        if total is None:
            total = values.copy()
        else:
            total += values
    if total is None:
        raise ConfigError("sum_mod needs at least one block, got none")
    return reduce_mod(total, bits=bits)


def reduce_mod(values: Counts, *, bits: int) -> Counts:
    """``values mod 2^k`` for ``uint64`` values (in place when possible)."""
    if bits < MAX_BITS:
        values &= np.uint64((1 << bits) - 1)
    return values


def num_values(shape: tuple[int, ...]) -> int:
    """The number of values in a block of ``shape``.

    Raises:
        ConfigError: if ``shape`` is not a tuple of non-negative integers.
    """
    if any(not isinstance(size, int | np.integer) or size < 0 for size in shape):
        raise ConfigError(f"shape must be a tuple of non-negative integers, got {shape}")
    return math.prod(int(size) for size in shape)


def _layout(shape: tuple[int, ...], bits: int) -> tuple[int, int]:
    check_bits(bits)
    count = num_values(shape)
    width = -(-bits // 8)
    if count * width + MAX_BITS // 8 > _MAX_STREAM_BYTES:
        raise ConfigError(f"a {shape} block of {bits}-bit masks exceeds one ChaCha20 stream")
    return count, width


def _word_dtype(width: int) -> np.dtype[Any]:
    return np.dtype(f"<u{1 << (width - 1).bit_length()}")


def _keystream_words(
    seed: bytes, nonce: bytes, *, count: int, width: int
) -> npt.NDArray[np.unsignedinteger[Any]]:
    """Word ``n`` holds keystream bytes ``[n w, n w + itemsize)``: its low ``8 w`` bits are value n.

    For w = 3, 5, 6, 7 the words overlap (stride w, itemsize 4 or 8); the extra high bytes
    belong to the next value and vanish in the final reduction mod 2^k, because the low bits of
    a sum depend only on the low bits of its terms.
    """
    dtype = _word_dtype(width)
    encryptor = Cipher(algorithms.ChaCha20(seed, nonce), mode=None).encryptor()
    stream = encryptor.update(bytes(count * width + dtype.itemsize - width))
    words: npt.NDArray[np.unsignedinteger[Any]] = np.ndarray(
        (count,), dtype=dtype, buffer=stream, strides=(width,)
    )
    return words
