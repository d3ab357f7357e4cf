"""Encrypted gradient histograms, computed by a holder that cannot read them.

The holder has one ciphertext ``c_i = Enc(G_i 2^53 + H_i)`` per row. The encrypted sum over a set
of rows is the product of their ciphertexts modulo ``n^2``. Three ways to do less of that work,
each exact:

- per column, the bin holding most of the node's rows is never summed: it is the node's total
  divided by the other bins (one modular inverse); a one-hot column then costs only its ones;
- a node whose sibling is given gets its histogram by division too: parent over sibling (the
  histogram subtraction of LightGBM and of FATE's SecureBoost), so of two children only the
  smaller is summed;
- the cumulative sums go out ``k`` to a ciphertext, ``prod_j C_j^(2^(107 j))``, and each outgoing
  ciphertext is multiplied by a fresh ``Enc(0)`` so that its randomness says nothing about which
  rows were multiplied into it (the key holder could otherwise recover ``r`` and test row sets).
"""

from __future__ import annotations

from collections.abc import Sequence

import gmpy2
import numpy as np
import numpy.typing as npt

from vfl.boost.fixed_point import SLOT_BITS
from vfl.boost.paillier import PublicKey

BinSums = list[list[gmpy2.mpz]]
"""Per column, the encrypted sum of each bin, the missing code last."""

ONE = gmpy2.mpz(1)


def product(
    ciphertexts: Sequence[gmpy2.mpz], indices: Sequence[int], n_square: gmpy2.mpz
) -> gmpy2.mpz:
    """The encrypted sum of ``ciphertexts[i]`` over ``indices``."""
    total = ONE
    for index in indices:
        total = total * ciphertexts[index] % n_square
    return total


def encrypted_bin_sums(
    codes: npt.NDArray[np.uint16],
    bins: Sequence[int],
    rows: npt.NDArray[np.int64],
    ciphertexts: Sequence[gmpy2.mpz],
    n_square: gmpy2.mpz,
) -> BinSums:
    """Every column's encrypted per-bin sums over ``rows`` (the node's own work)."""
    node_total = product(ciphertexts, rows.tolist(), n_square)
    return [
        _column_sums(codes[rows, j], rows, int(k) + 1, node_total, ciphertexts, n_square)
        for j, k in enumerate(bins)
    ]


def _column_sums(
    column_codes: npt.NDArray[np.uint16],
    rows: npt.NDArray[np.int64],
    num_codes: int,
    node_total: gmpy2.mpz,
    ciphertexts: Sequence[gmpy2.mpz],
    n_square: gmpy2.mpz,
) -> list[gmpy2.mpz]:
    counts = np.bincount(column_codes, minlength=num_codes)
    largest = int(np.argmax(counts))
    order = np.argsort(column_codes, kind="stable")
    ends = np.cumsum(counts)
    sums = [ONE] * num_codes
    others = ONE
    for code in np.flatnonzero(counts).tolist():
        if code == largest:
            continue
        members = rows[order[ends[code] - counts[code] : ends[code]]]
        sums[code] = product(ciphertexts, members.tolist(), n_square)
        others = others * sums[code] % n_square
    sums[largest] = node_total * gmpy2.invert(others, n_square) % n_square
    return sums


def subtract(parent: BinSums, child: BinSums, n_square: gmpy2.mpz) -> BinSums:
    """The sibling's per-bin sums: ``parent / child`` bin by bin."""
    return [
        [p * gmpy2.invert(c, n_square) % n_square for p, c in zip(ps, cs, strict=True)]
        for ps, cs in zip(parent, child, strict=True)
    ]


def cumulative(sums: BinSums, bins: Sequence[int], n_square: gmpy2.mpz) -> list[gmpy2.mpz]:
    """Running encrypted sums over each column's present bins, columns concatenated."""
    flat = []
    for column, k in zip(sums, bins, strict=True):
        running = ONE
        for value in column[:k]:
            running = running * value % n_square
            flat.append(running)
    return flat


def pack(values: Sequence[gmpy2.mpz], slots: int, key: PublicKey) -> list[int]:
    """``values`` ``slots`` to a ciphertext, lowest slot first, each re-randomized."""
    n_square = gmpy2.mpz(key.n_square)
    shift = gmpy2.mpz(1) << SLOT_BITS
    packed = []
    for start in range(0, len(values), slots):
        group = values[start : start + slots]
        total = group[-1]
        for value in reversed(group[:-1]):
            total = gmpy2.powmod(total, shift, n_square) * value % n_square
        packed.append(int(total * key.encrypt_zero() % n_square))
    return packed
