"""Private set intersection of the holders' ID lists, by commutative blinding (ECDH-PSI).

The group is the prime-order subgroup of Curve25519 (order ``L = 2^252 + ...``), with elements
written as their X25519 u-coordinate and scalar multiplication by libsodium's X25519
(``crypto_scalarmult``, through PyNaCl): ``vfl.deploy.psi_group`` holds its arithmetic, the hash
``H`` to it and the checks of received elements. Notation, for holders ``h = 0..M`` (``0`` is
the server, the label holder) with ID sets ``S_h`` and secret scalars ``k_h``:

- Every holder makes ``[k_h H(x) for x in S_h]`` in a secret random order. Each party ``i``
  blinds the server's list into ``k_i k_0 H(S_0)`` and the server blinds party ``i``'s list
  into ``k_0 k_i H(S_i)``, each keeping the order. Scalar multiplication commutes, so an ID
  ``x`` that the server and party ``i`` both hold gives equal elements ``k_0 k_i H(x)`` in the
  two lists (up to hash collisions and ``H(x) = -H(y)``, which share a u-coordinate:
  probability about ``n^2 / L``); ``intersect_with_server`` matches them, per party.
- The server keeps the IDs every party holds and tells each party which positions of its list
  those are (ascending positions, so their order says nothing). Every holder then orders its
  shared rows by ``order_key`` of their IDs, a public hash: the same order at every holder and
  in every run over the same data, whatever the secret scalars and list orders were, and
  unrelated to any holder's file order. A holder learns nothing from it: it already knows the
  IDs of its own shared rows, and the order is a function of those alone.

What each role learns (semi-honest, non-colluding holders; decisional Diffie-Hellman in the
group): a party sees only the server's list, blinded by the server's key, so it learns the
server's set size and which of *its own* rows are in the intersection. The server learns each
party's set size and, for each of its own IDs, which parties hold it (matching ``k_0 k_i H``
of both lists), but nothing of an ID it does not hold: two parties' lists carry different keys
(``k_0 k_i`` and ``k_0 k_j``), so they cannot be compared, and testing a guess ``x`` needs
``k_i H(x)``, that is party ``i``'s key.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from vfl.deploy.psi_group import (
    blind,
    hash_chunk,
    multiplier,
    new_scalar,
    order_key,
    split_points,
)
from vfl.deploy.psi_work import joined
from vfl.errors import WireError


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
        ordered = [self._ids[i] for i in self._order]
        multiply = multiplier(self._scalar)
        return joined(lambda chunk: multiply(hash_chunk(chunk)), ordered)

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


def intersect_with_server(
    own: Sequence[bytes], theirs: Sequence[bytes]
) -> list[npt.NDArray[np.int64]]:
    """The positions of the IDs that every holder has: in the server's list, then in each party's.

    Args:
        own: Per party ``i`` (in order), the server's list as party ``i`` blinded it
            (``k_i k_0 H(S_0)``, in the server's order).
        theirs: Per party ``i``, its list as the server blinded it (``k_0 k_i H(S_i)``, in
            party ``i``'s order).

    Returns:
        ``[server positions, party 1's positions, ...]``, each ascending.

    Raises:
        WireError: if a list repeats an element (distinct IDs cannot collide in practice).
    """
    matches = []
    for party, (server_list, party_list) in enumerate(zip(own, theirs, strict=True), start=1):
        index = _index(party_list, f"party {party}'s list, blinded by the server,")
        _index(server_list, f"the server's list, blinded by party {party},")
        elements = split_points(server_list)
        matches.append({at: index[point] for at, point in enumerate(elements) if point in index})
    common = sorted(set.intersection(*(set(match) for match in matches))) if matches else []
    positions = [np.array(common, dtype=np.int64)]
    for match in matches:
        positions.append(np.array(sorted(match[at] for at in common), dtype=np.int64))
    return positions


def _index(points: bytes, what: str) -> dict[bytes, int]:
    elements = split_points(points)
    index = {point: at for at, point in enumerate(elements)}
    if len(index) != len(elements):
        raise WireError(f"{what} repeats an element")
    return index
