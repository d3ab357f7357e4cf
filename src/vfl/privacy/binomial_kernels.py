"""The bit-sliced Binomial sampler's level loop: a numpy reference and a compiled twin (numba).

``vfl.privacy.binomial`` defines the sampler: every coordinate's ``b`` Bernoulli trials are
split into units of at most 64 trials, one bit each in a 64-bit word, and each trial compares a
uniform number with ``p`` bit by bit, most significant bit first, against ``T = p 2^64``. At
level ``k`` (63 down to 0) every unit with a trial still undecided takes the next 64-bit word
``W`` of the random stream, in unit order; where bit ``k`` of ``T`` is 1, the trials whose bit
of ``W`` is 0 succeed and those with a 1 stay undecided; where it is 0, those with a 1 fail and
those with a 0 stay undecided. Both functions here run those levels until every trial is decided
or the words run out, and consume the words in exactly that order, so their output is identical;
``tests/privacy/test_binomial.py`` checks it. Without numba (the ``fast`` extra) ``AVAILABLE``
is False and the sampler runs the numpy reference.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

Words = npt.NDArray[np.uint64]
Units = npt.NDArray[np.int64]

AVAILABLE = importlib.util.find_spec("numba") is not None
"""Whether the compiled loop can be used (numba is installed; it is imported on first use)."""

_ONE = np.uint64(1)


def reference_levels(
    thresholds: Words,
    active: Units,
    undecided: Words,
    successes: Words,
    words: Words,
    level: int,
) -> tuple[Units, int, int]:
    """Run levels ``level, level - 1, ..., 0`` over the units in ``active`` (numpy).

    ``undecided`` and ``successes`` (one word per unit) are updated in place. Stops early when
    no unit is undecided or ``words`` cannot cover the next level; returns the units still
    undecided, the words used, and the next level to run (``-1`` when all levels ran).
    """
    used = 0
    while level >= 0 and len(active):
        if used + len(active) > len(words):
            break
        draw = words[used : used + len(active)]
        used += len(active)
        bit = (thresholds[active] >> np.uint64(level)) & _ONE
        ones = np.uint64(0) - bit  # all ones where the threshold's bit is 1
        left = undecided[active]
        successes[active] |= left & ~draw & ones
        left &= ~(draw ^ ones)
        undecided[active] = left
        active = active[left != 0]
        level -= 1
    return active, used, level


def _compiled_levels(
    thresholds: Words,
    active: Units,
    count: int,
    undecided: Words,
    successes: Words,
    words: Words,
    level: int,
) -> tuple[int, int, int]:
    """``reference_levels`` as one loop; ``active[:count]`` is compacted in place."""
    used = 0
    available = len(words)
    while level >= 0 and count > 0:
        if used + count > available:
            break
        kept = 0
        shift = np.uint64(level)
        for a in range(count):
            unit = active[a]
            draw = words[used]
            used += 1
            ones = np.uint64(0) - ((thresholds[unit] >> shift) & np.uint64(1))
            left = undecided[unit]
            successes[unit] |= left & ~draw & ones
            left &= ~(draw ^ ones)
            undecided[unit] = left
            active[kept] = unit  # written always, kept only if undecided: no branch to miss
            kept += left != 0
        count = kept
        level -= 1
    return count, used, level


def _popcounts(words: Words, out: Units) -> None:
    """The number of set bits of each word (a branch-free SWAR count)."""
    for n in range(len(words)):
        x = words[n]
        x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
        x = (x & np.uint64(0x3333333333333333)) + (
            (x >> np.uint64(2)) & np.uint64(0x3333333333333333)
        )
        x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
        out[n] = np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@cache
def compiled() -> tuple[Callable[..., Any], ...]:
    """The level loop and the bit count, compiled by numba once per process (cached on disk).

    Raises:
        ImportError: if numba is not installed (check ``AVAILABLE`` first).
    """
    import numba

    jit = numba.njit(cache=True, nogil=True)
    return jit(_compiled_levels), jit(_popcounts)


def reference_popcounts(words: Words) -> Units:
    """The number of set bits of each word (numpy)."""
    as_bytes = words.astype("<u8").view(np.uint8).reshape(len(words), 8)
    counts: Units = np.unpackbits(as_bytes, axis=1).sum(axis=1, dtype=np.int64)
    return counts
