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
  list are shared (ascending positions, so their order says nothing). Every holder then orders
  its shared rows by ``order_key`` of their IDs, a public hash: the same order at every holder
  and in every run over the same data, whatever the secret scalars and list orders were, and
  unrelated to any holder's file order. A holder learns nothing from it: it already knows the
  IDs of its own shared rows, and the order is a function of those alone.

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
ORDER_DOMAIN = b"vfl-psi-v1/row-order/"


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


def order_key(value: bytes) -> bytes:
    """The key by which every holder sorts the shared IDs: SHA-256 of the ID, domain-separated.

    Example:
        >>> len(order_key(b"alice")), order_key(b"alice") < order_key(b"bob")
        (32, False)
    """
    return hashlib.sha256(ORDER_DOMAIN + value).digest()


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


def first_invalid(points: bytes) -> int | None:
    """The index of the first element that is not a point of the prime-order group, if any."""
    for index, point in enumerate(split_points(points)):
        if not bindings.crypto_core_ed25519_is_valid_point(point):
            return index
    return None


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

    def rows(self, shared: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Own row positions of the shared IDs, sorted by ``order_key`` of the IDs.

        Args:
            shared: Positions in the sent list of the elements every holder has.

        Raises:
            WireError: unless ``shared`` holds distinct positions of the sent list.
        """
        shared = np.asarray(shared)
        if shared.ndim != 1 or shared.dtype != np.int64:
            raise WireError(f"a PSI result must be 1-D int64, got {shared.dtype} {shared.shape}")
        if len(shared) and (shared.min() < 0 or shared.max() >= self.size):
            raise WireError(f"a PSI result names positions outside [0, {self.size - 1}]")
        if len(np.unique(shared)) != len(shared):
            raise WireError("a PSI result repeats a position")
        rows = self._order[shared].tolist()
        rows.sort(key=lambda row: (order_key(self._ids[row]), self._ids[row]))
        return np.array(rows, dtype=np.int64)


def intersect(lists: Sequence[bytes]) -> list[npt.NDArray[np.int64]]:
    """For each fully blinded list, the ascending positions of the elements every list holds.

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
    common = set.intersection(*(set(index) for index in positions))
    return [np.array(sorted(index[p] for p in common), dtype=np.int64) for index in positions]
