"""Compiled bit-stream loops for ``vfl.wire.bitpack`` (numba, an optional extra).

``pack_bits`` and ``unpack_bits`` lay codes out as one little-endian bit stream; their numpy
paths build it from whole-array shifts, several passes and temporaries per message. The loops
here write and read the same stream code by code in one pass, which is several times faster for
the few thousand codes of a message (masked PBM sums, lattice codes). They serve widths up to
``STREAM_MAX_BITS`` that are not whole bytes; ``tests/wire/test_bitpack.py`` checks them against
the numpy paths. Without numba (``pip install vfl[fast]`` adds it) ``available()`` is False.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from vfl import jit
from vfl.errors import WireError

Ints = npt.NDArray[np.int64]
Bytes = npt.NDArray[np.uint8]


def available() -> bool:
    """Whether the compiled loops can run (numba installed and importing; see ``vfl.jit``)."""
    return jit.usable()


STREAM_MAX_BITS = 32
"""The widest code the loops take: the bits held between bytes (at most 7 + 32) fit an int64."""


def _pack_stream(codes: Ints, bits: int) -> Bytes:
    """``codes`` (each below ``2**bits``) as the little-endian bit stream ``pack_bits`` writes."""
    out = np.zeros((len(codes) * bits + 7) // 8, dtype=np.uint8)
    held = 0  # bits not yet written, in the low ``filled`` bits
    filled = 0
    at = 0
    for k in range(len(codes)):
        held |= codes[k] << filled
        filled += bits
        while filled >= 8:
            out[at] = held & 0xFF
            held >>= 8
            filled -= 8
            at += 1
    if filled:
        out[at] = held
    return out


def _unpack_stream(data: Bytes, bits: int, count: int) -> tuple[Ints, bool]:
    """Inverse of ``_pack_stream``, and whether every padding bit after the last code is zero."""
    out = np.empty(count, dtype=np.int64)
    mask = (1 << bits) - 1
    held = 0
    filled = 0
    at = 0
    for k in range(count):
        while filled < bits:
            held |= int(data[at]) << filled
            at += 1
            filled += 8
        out[k] = held & mask
        held >>= bits
        filled -= bits
    return out, held == 0 and at == len(data)


@cache
def compiled() -> tuple[Callable[..., Any], ...]:
    """The packer and the unpacker, compiled by numba once per process (cached on disk).

    Raises:
        ImportError: if numba is not installed (check ``available()`` first).
    """
    return jit.njit(_pack_stream, _unpack_stream)


LOAD_FROM_CODES = 2048
"""The fewest codes for which a message loads the loops into a process that has not loaded them.

Loading them (numba's import and its typing of the loops, read from the disk cache) costs each
process about 0.7 s of CPU once; below this many codes the loops save 20-40 µs a message (numpy
20-44 µs against 1-5 µs; ``bench/bench_bitpack.py``, docs/benchmarks.md), so the load pays off
only after some 25,000 such messages. A process whose messages are all small, as a deployment's
batches of row IDs are, never loads numba: the four processes of a launch would otherwise spend
0.7 s each on it before their first evaluation. Once the loops are loaded they serve every
size."""


def serves(bits: int, count: int) -> bool:
    """Whether the compiled loops pack ``count`` codes of ``bits`` bits.

    They do for widths up to ``STREAM_MAX_BITS`` that are not whole bytes, where numba is
    present, and for a message of fewer than ``LOAD_FROM_CODES`` codes only once loaded.
    """
    if bits % 8 == 0 or bits > STREAM_MAX_BITS:
        return False
    if count < LOAD_FROM_CODES and not loaded():
        return False
    return available()


def loaded() -> bool:
    """Whether this process has loaded the loops (``compiled()`` has run)."""
    return compiled.cache_info().currsize > 0


def pack_stream(codes: Ints, bits: int) -> bytes:
    """The bytes ``pack_bits(codes, bits=bits)`` gives (the caller checked the codes' range)."""
    packed: Bytes = compiled()[0](codes, bits)
    return packed.tobytes()


def unpack_stream(data: bytes | memoryview, bits: int, count: int) -> Ints:
    """``count`` codes of ``bits`` bits from ``data``, as ``unpack_bits`` reads them.

    Raises:
        WireError: if ``data`` is not exactly the packed size (checked here because the loop
            reads without bounds checks) or a padding bit after the last code is set.
    """
    expected = (count * bits + 7) // 8
    if len(data) != expected:
        raise WireError(f"{count} codes of {bits} bits need {expected} bytes, got {len(data)}")
    codes, clean = compiled()[1](np.frombuffer(data, dtype=np.uint8), bits, count)
    if not clean:
        raise WireError("non-zero padding bits after the last code")
    unpacked: Ints = codes
    return unpacked
