"""The exact Binomial sampler's level loop: a numpy reference and a compiled twin (numba).

``vfl.privacy.binomial`` defines the sampler. Each trial compares a uniform number with ``p``
bit by bit, most significant bit first, against ``T = p 2^64``; all of a coordinate's trials
still undecided are alike, so only their number matters. At level ``k`` (63 down to 0) every
coordinate with ``N > 0`` undecided trials, in coordinate order, takes the next ``ceil(N / 64)``
64-bit words of the random stream, and the first ``N`` of their bits (word by word, bit 0 first)
are those trials' next bits. With ``s`` of them set: where bit ``k`` of ``T`` is 1, the
``N - s`` trials that drew a 0 succeed and the ``s`` others stay undecided; where it is 0, the
``s`` that drew a 1 fail and the ``N - s`` others stay. Trials undecided after level 0 tie with
``T`` in all 64 bits and fail (their uniform is at least ``p``). Both functions here run those
levels until no trial is undecided or the words run out, reading the words in exactly that
order, so their counts are identical (``tests/privacy/test_binomial.py``). Without numba (the
``fast`` extra) ``available()`` is False and the sampler runs the numpy reference.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from vfl import jit

Words = npt.NDArray[np.uint64]
Ints = npt.NDArray[np.int64]

_ONE = np.uint64(1)
_FULL = np.uint64(0xFFFFFFFFFFFFFFFF)


def available() -> bool:
    """Whether the compiled loop can run (numba installed and importing; see ``vfl.jit``)."""
    return jit.usable()


def words_needed(undecided: Ints) -> int:
    """The words one level takes for coordinates with these undecided counts."""
    return int(((undecided + 63) >> 6).sum())


def reference_levels(
    thresholds: Words,
    active: Ints,
    undecided: Ints,
    successes: Ints,
    words: Words,
    level: int,
) -> tuple[Ints, int, int]:
    """Run levels ``level, level - 1, ..., 0`` over the coordinates in ``active`` (numpy).

    ``undecided`` and ``successes`` (one count per coordinate) are updated in place. Stops early
    when no trial is undecided or ``words`` cannot cover the next level; returns the coordinates
    still undecided, the words used, and the next level to run (``-1`` when all levels ran).
    """
    used = 0
    while level >= 0 and len(active):
        left = undecided[active]
        per = (left + 63) >> 6
        need = int(per.sum())
        if used + need > len(words):
            break
        ends = np.cumsum(per) - 1
        rest = left & 63
        masks = np.full(need, _FULL)
        partial = rest > 0
        masks[ends[partial]] = (_ONE << rest[partial].astype(np.uint64)) - _ONE
        bits = reference_popcounts(words[used : used + need] & masks)
        used += need
        ones = np.add.reduceat(bits, ends - per + 1)
        one = ((thresholds[active] >> np.uint64(level)) & _ONE).astype(bool)
        successes[active] += np.where(one, left - ones, 0)
        left = np.where(one, ones, left - ones)
        undecided[active] = left
        active = active[left != 0]
        level -= 1
    return active, used, level


def _compiled_levels(
    thresholds: Words,
    active: Ints,
    count: int,
    undecided: Ints,
    successes: Ints,
    words: Words,
    level: int,
) -> tuple[int, int, int]:
    """``reference_levels`` as loops; ``active[:count]`` is compacted in place.

    Every coordinate in ``active[:count]`` must have ``undecided >= 1`` (the sampler starts them
    at b >= 1 and drops them at 0): the last-word mask below shifts by ``64 - remaining``.
    """
    used = 0
    supply = len(words)
    full = np.uint64(0xFFFFFFFFFFFFFFFF)
    m1 = np.uint64(0x5555555555555555)
    m2 = np.uint64(0x3333333333333333)
    m4 = np.uint64(0x0F0F0F0F0F0F0F0F)
    h01 = np.uint64(0x0101010101010101)
    need = 0
    for a in range(count):
        need += (undecided[active[a]] + 63) >> 6
    while level >= 0 and count > 0:
        if used + need > supply:
            break
        kept = 0
        need = 0  # the next level's, counted as this one runs
        shift = np.uint64(level)
        for a in range(count):
            unit = active[a]
            left = undecided[unit]
            drawn = 0  # set bits of the whole words first, then of the last one, masked
            remaining = left
            while remaining > 64:
                x = words[used]
                used += 1
                remaining -= 64
                x = x - ((x >> np.uint64(1)) & m1)  # a branch-free (SWAR) count of set bits
                x = (x & m2) + ((x >> np.uint64(2)) & m2)
                x = (x + (x >> np.uint64(4))) & m4
                drawn += int((x * h01) >> np.uint64(56))
            x = words[used] & (full >> np.uint64(64 - remaining))  # remaining is 1..64
            used += 1
            x = x - ((x >> np.uint64(1)) & m1)
            x = (x & m2) + ((x >> np.uint64(2)) & m2)
            x = (x + (x >> np.uint64(4))) & m4
            ones = drawn + np.int64((x * h01) >> np.uint64(56))
            one = np.int64((thresholds[unit] >> shift) & np.uint64(1))
            # Branch-free: a 1 in T lets the zeros succeed and keeps the ones; a 0 fails the
            # ones and keeps the zeros.
            successes[unit] += one * (left - ones)
            left = one * ones + (1 - one) * (left - ones)
            undecided[unit] = left
            active[kept] = unit  # written always, kept only if undecided: no branch to miss
            kept += left != 0
            need += (left + 63) >> 6
        count = kept
        level -= 1
    return count, used, level


@cache
def compiled() -> Callable[..., Any]:
    """The level loop, compiled by numba once per process (machine code cached on disk).

    Raises:
        ImportError: if numba is not usable (check ``available()`` first).
    """
    return jit.njit(_compiled_levels)[0]


def reference_popcounts(words: Words) -> Ints:
    """The number of set bits of each word (numpy)."""
    as_bytes = words.astype("<u8").view(np.uint8).reshape(len(words), 8)
    counts: Ints = np.unpackbits(as_bytes, axis=1).sum(axis=1, dtype=np.int64)
    return counts
