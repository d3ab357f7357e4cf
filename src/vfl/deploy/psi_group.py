"""The PSI group: hashing IDs to it, blinding, and checking what other holders send.

The group is the prime-order subgroup of Curve25519 (order ``L = 2^252 + ...``), with elements
written as their X25519 u-coordinate and scalar multiplication by libsodium's X25519
(``crypto_scalarmult``, through PyNaCl); ``vfl.deploy.psi`` runs the intersection over it.

``H(x)``, the hash to the group: ``SHA-512(DOMAIN || x)`` is cut into two 32-byte halves, each
mapped with Elligator 2 (``crypto_core_ed25519_from_uniform``, which clears the cofactor),
and the two points are added: the map-twice-and-add shape of RFC 9380's ``hash_to_curve``
(section 3), with SHA-512 halves in place of its ``hash_to_field``. The sum, a point of the
prime-order subgroup of edwards25519, is written as the u-coordinate of the same point on
Curve25519 (``u = (1 + y) / (1 - y)``, RFC 7748 section 4.1).

Scalars are X25519 secret keys: 32 bytes from the operating system, clamped by X25519 (a
multiple of the cofactor 8, so every product stays in the prime-order subgroup). X25519 is the
fastest constant-time scalar multiplication libsodium offers (about three times faster than
edwards25519's, which also re-checks subgroup membership on every call).

Checks: every element received must be a canonical u-coordinate (below ``2^255 - 19``) that is
not of small order (libsodium refuses those too). An element on the curve's quadratic twist is
not detected (that would take an exponentiation per element): it is harmless, as blinding keeps
it on the twist, so it can never equal an element of an honest holder (which stays in the
prime-order subgroup of the curve), and X25519 is safe on the twist (its order is 4 times a
prime, and every clamped scalar is a multiple of 8). Such an ID simply drops out.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
from nacl import bindings

from vfl.deploy.psi_work import joined
from vfl.errors import WireError

POINT_BYTES = 32
DOMAIN = b"vfl-psi-v2/curve25519/"
ORDER_DOMAIN = b"vfl-psi-v1/row-order/"
FIELD_PRIME = 2**255 - 19
SMALL_ORDER = tuple(
    bytes.fromhex(value)
    for value in (
        "00" * 32,  # order 2
        "01" + "00" * 31,  # order 4
        "ec" + "ff" * 30 + "7f",  # p - 1, order 4
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",  # order 8
        "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",  # order 8
    )
)
"""The canonical u-coordinates of the points of order 2, 4 and 8 (libsodium refuses them)."""


def hash_to_group(value: bytes) -> bytes:
    """``H(value)``: an element of the prime-order subgroup, as its 32-byte u-coordinate.

    Example:
        >>> len(hash_to_group(b"alice")), hash_to_group(b"alice") == hash_to_group(b"bob")
        (32, False)
    """
    return hash_many([value])


def hash_many(values: Sequence[bytes]) -> bytes:
    """``H(x)`` of every value, concatenated in order (work split across the cores)."""
    return joined(hash_chunk, values)


def hash_chunk(values: Sequence[bytes]) -> list[bytes]:
    """``H`` of each value, in one pass (``hash_many`` spreads the chunks over threads)."""
    # Edwards y of each sum; u = (1 + y) / (1 - y), every inverse from one (Montgomery's trick).
    ys = [int.from_bytes(_edwards_sum(value), "little") & ((1 << 255) - 1) for value in values]
    denominators = [(1 - y) % FIELD_PRIME for y in ys]
    inverses = _inverses(denominators)
    return [
        ((1 + y) * inverse % FIELD_PRIME).to_bytes(POINT_BYTES, "little")
        for y, inverse in zip(ys, inverses, strict=True)
    ]


def _edwards_sum(value: bytes) -> bytes:
    digest = hashlib.sha512(DOMAIN + value).digest()
    first = bindings.crypto_core_ed25519_from_uniform(digest[:POINT_BYTES])
    second = bindings.crypto_core_ed25519_from_uniform(digest[POINT_BYTES:])
    point: bytes = bindings.crypto_core_ed25519_add(first, second)
    return point


def _inverses(values: list[int]) -> list[int]:
    """``1 / v mod p`` of every value with one modular inversion.

    Raises:
        ValueError: if a value is 0 (the sum of the two maps was the neutral element, which a
            hash reaches with probability about ``2^-252``).
    """
    prefix = [1]
    for value in values:
        prefix.append(prefix[-1] * value % FIELD_PRIME)
    if prefix[-1] == 0:
        raise ValueError("an ID hashed to the neutral element; it cannot take part in PSI")
    inverse = pow(prefix[-1], -1, FIELD_PRIME)
    out = [0] * len(values)
    for index in range(len(values) - 1, -1, -1):
        out[index] = inverse * prefix[index] % FIELD_PRIME
        inverse = inverse * values[index] % FIELD_PRIME
    return out


def order_key(value: bytes) -> bytes:
    """The key by which every holder sorts the shared IDs: SHA-256 of the ID, domain-separated.

    Example:
        >>> len(order_key(b"alice")), order_key(b"alice") < order_key(b"bob")
        (32, False)
    """
    return hashlib.sha256(ORDER_DOMAIN + value).digest()


def new_scalar() -> bytes:
    """A secret scalar: an X25519 secret key from the operating system's CSPRNG.

    Keys never come from a seeded generator: a seed in a config would reveal them.
    """
    return os.urandom(32)


def blind(points: bytes, scalar: bytes) -> bytes:
    """Multiply every element of a concatenated list by ``scalar``, keeping the order.

    Raises:
        WireError: if the bytes are not a whole number of valid elements.
    """
    index = first_invalid(points)
    if index is not None:
        raise WireError(
            f"a PSI list holds bytes that are not an element of the group (element {index})"
        )
    return joined(multiplier(scalar), split_points(points))


def multiplier(scalar: bytes) -> Callable[[Sequence[bytes]], list[bytes]]:
    """A function multiplying a chunk of elements by ``scalar``."""
    multiply = bindings.crypto_scalarmult

    def chunk(points: Sequence[bytes]) -> list[bytes]:
        try:
            return [multiply(scalar, point) for point in points]
        except RuntimeError:  # libsodium: a small-order input or a zero product
            raise WireError(
                "a PSI list holds bytes that are not an element of the prime-order group"
            ) from None

    return chunk


def first_invalid(points: bytes) -> int | None:
    """The index of the first element that is not a valid u-coordinate, if any.

    Valid: canonical (below ``2^255 - 19``) and not of small order. Whether it is on the curve
    rather than its twist is not checked (see the module's documentation).
    """
    elements = _as_rows(points)
    bad = _non_canonical(elements)
    for small in SMALL_ORDER:
        bad |= (elements == np.frombuffer(small, dtype=np.uint8)).all(axis=1)
    found = np.flatnonzero(bad)
    return int(found[0]) if len(found) else None


def _as_rows(points: bytes) -> npt.NDArray[np.uint8]:
    if len(points) % POINT_BYTES:
        split_points(points)  # raises, naming the length
    return np.frombuffer(points, dtype=np.uint8).reshape(-1, POINT_BYTES)


def _non_canonical(elements: npt.NDArray[np.uint8]) -> npt.NDArray[np.bool_]:
    """Rows whose little-endian value is at least ``p = 2^255 - 19``."""
    top = elements[:, 31]
    middle_full = (elements[:, 1:31] == 0xFF).all(axis=1)
    at_least_p = (top == 0x7F) & middle_full & (elements[:, 0] >= 0xED)
    result: npt.NDArray[np.bool_] = (top > 0x7F) | at_least_p
    return result


def first_repeat(points: bytes) -> tuple[int, int] | None:
    """The indices ``(earlier, later)`` of the first element that occurs twice, if any."""
    seen: dict[bytes, int] = {}
    for index, point in enumerate(split_points(points)):
        if point in seen:
            return seen[point], index
        seen[point] = index
    return None


def split_points(points: bytes) -> list[bytes]:
    """The 32-byte elements of a concatenated list.

    Raises:
        WireError: if the length is not a multiple of 32.
    """
    if len(points) % POINT_BYTES:
        raise WireError(
            f"a PSI list of {len(points)} bytes is not a whole number of"
            f" {POINT_BYTES}-byte elements"
        )
    return [points[i : i + POINT_BYTES] for i in range(0, len(points), POINT_BYTES)]
