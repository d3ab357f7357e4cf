"""Private set intersection of the holders' ID lists, by commutative blinding (ECDH-PSI).

The group is the prime-order subgroup of edwards25519 (order ``L = 2^252 + ...``), through
libsodium's ``crypto_core_ed25519`` functions (PyNaCl). Notation, for holders ``h = 0..M``
(``0`` is the server, the label holder) with ID sets ``S_h`` and secret scalars ``k_h``:

- ``H(x)``: hash to the group. ``SHA-512(DOMAIN || x)`` is cut into two 32-byte halves, each
  mapped with Elligator 2 (``crypto_core_ed25519_from_uniform``, which clears the cofactor),
  and the two points are added: the map-twice-and-add shape of RFC 9380's ``hash_to_curve``
  (section 3), with SHA-512 halves in place of its ``hash_to_field``.
- Every holder sends ``[k_h H(x) for x in S_h]`` in a secret random order; each list then
  visits every other holder once, who multiplies each element by its own scalar and keeps the
  order. Scalar multiplication commutes, so the fully blinded element of ``x`` is
  ``(k_0 k_1 ... k_M) H(x)`` whoever owns it: equal elements mean equal IDs (up to hash
  collisions, probability about ``n^2 / L``).
- The server intersects the fully blinded lists and tells each holder which positions of its
  list are shared, in the canonical order (ascending fully blinded encoding), so every holder
  orders its rows identically.

What each role learns (semi-honest, non-colluding holders; decisional Diffie-Hellman in the
group): a party sees only lists blinded by at least one key it does not hold, so it learns
the other holders' set sizes and which of *its own* rows are in the intersection. The server
learns the same for its labels file, the sizes of every sub-intersection (how many IDs each
group of holders shares, from matching fully blinded lists), but no ID it does not hold
itself: testing a guess ``x`` needs ``(k_0 ... k_M) H(x)``, that is every holder's key.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from nacl import bindings
from nacl.exceptions import CryptoError

from vfl.errors import WireError

POINT_BYTES = 32
DOMAIN = b"vfl-psi-v1/edwards25519/"


def hash_to_group(value: bytes) -> bytes:
    """``H(value)``: an element of the prime-order subgroup, as its 32-byte encoding.

    Example:
        >>> len(hash_to_group(b"alice")), hash_to_group(b"alice") == hash_to_group(b"bob")
        (32, False)
    """
    digest = hashlib.sha512(DOMAIN + value).digest()
    first = bindings.crypto_core_ed25519_from_uniform(digest[:POINT_BYTES])
    second = bindings.crypto_core_ed25519_from_uniform(digest[POINT_BYTES:])
    point: bytes = bindings.crypto_core_ed25519_add(first, second)
    return point


def new_scalar() -> bytes:
    """A secret scalar, uniform mod ``L``, from the operating system's CSPRNG.

    Keys never come from a seeded generator: a seed in a config would reveal them.
    """
    scalar: bytes = bindings.crypto_core_ed25519_scalar_reduce(os.urandom(64))
    return scalar


def blind(points: bytes, scalar: bytes) -> bytes:
    """Multiply every element of a concatenated list by ``scalar``, keeping the order.

    Raises:
        WireError: if the bytes are not a whole number of valid subgroup elements.
    """
    out = []
    for point in split_points(points):
        try:
            out.append(bindings.crypto_scalarmult_ed25519_noclamp(scalar, point))
        except CryptoError:
            raise WireError(
                "a PSI list holds bytes that are not an element of the prime-order group"
            ) from None
    return b"".join(out)


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


class PsiHolder:
    """One holder's side of the intersection: its IDs, its secret scalar and secret order.

    Args:
        ids: The holder's distinct IDs, as bytes (see ``vfl.deploy.data.id_bytes``).
        rng: Draws the secret order of the list it sends (fresh entropy by default).
    """

    def __init__(self, ids: Sequence[bytes], *, rng: np.random.Generator | None = None) -> None:
        if len(set(ids)) != len(ids):
            raise ValueError(f"PSI needs distinct IDs; {len(ids) - len(set(ids))} are repeated")
        generator = rng if rng is not None else np.random.default_rng()
        self._ids = list(ids)
        self._order = generator.permutation(len(self._ids)).astype(np.int64)
        self._scalar = new_scalar()

    @property
    def size(self) -> int:
        """Number of IDs held."""
        return len(self._ids)

    def start(self) -> bytes:
        """``[k H(x)]`` over the own IDs, in the secret order."""
        hashed = b"".join(hash_to_group(self._ids[i]) for i in self._order)
        return blind(hashed, self._scalar)

    def blind(self, points: bytes) -> bytes:
        """Another holder's list, times the own scalar, in the order received."""
        return blind(points, self._scalar)

    def rows(self, order: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Own row positions in canonical order, from the positions the server sent back.

        Raises:
            WireError: unless ``order`` holds distinct positions of the sent list.
        """
        order = np.asarray(order)
        if order.ndim != 1 or order.dtype != np.int64:
            raise WireError(f"a PSI result must be 1-D int64, got {order.dtype} {order.shape}")
        if len(order) and (order.min() < 0 or order.max() >= self.size):
            raise WireError(f"a PSI result names positions outside [0, {self.size - 1}]")
        if len(np.unique(order)) != len(order):
            raise WireError("a PSI result repeats a position")
        rows: npt.NDArray[np.int64] = self._order[order]
        return rows


def intersect(lists: Sequence[bytes]) -> list[npt.NDArray[np.int64]]:
    """For each fully blinded list, the positions of shared elements in canonical order.

    The canonical order sorts the shared elements by their encoding; entry ``r`` of every
    result is the position, in that holder's list, of the element of rank ``r``.

    Raises:
        WireError: if a list repeats an element (distinct IDs cannot collide in practice).
    """
    positions = []
    for holder, points in enumerate(lists):
        elements = split_points(points)
        index = {point: i for i, point in enumerate(elements)}
        if len(index) != len(elements):
            raise WireError(f"holder {holder}'s fully blinded list repeats an element")
        positions.append(index)
    common = sorted(set.intersection(*(set(index) for index in positions)))
    return [np.array([index[p] for p in common], dtype=np.int64) for index in positions]
