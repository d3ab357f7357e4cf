"""Gradients as integers: fixed-point encoding, and packing ``(g, h)`` and bin sums into one number.

Paillier encrypts integers, so the label holder writes each row's gradient and hessian as
integers ``G_i = round(g_i 2^P)`` and ``H_i = round(h_i 2^P)``, with ``P`` chosen per tree so that
the sum over all ``N`` rows stays below ``2^51`` in magnitude. Every value then lies on the grid
``2^-P`` and every partial sum below ``2^53 2^-P``, so float64 sums of the quantized values are
exact in any order: the label holder's plaintext histograms, the decrypted encrypted ones and a
centralized reference all see the same numbers, and trees agree exactly, not just closely.

One plaintext carries a row's pair, ``V_i = G_i 2^53 + H_i`` (FATE's gradient packing, but with
``G`` signed in the top field: hessians are never negative, so ``H`` never borrows and no offset
or row count is needed to undo a shift). A sum of such values is ``G 2^53 + H`` with
``0 <= H < 2^53``, which one shift and one mask take apart. A passive party packs ``k`` of those
sums (one per bin) into one plaintext, ``sum_j S_j 2^(107 j)`` (SecureBoost+'s ciphertext
compression, Chen et al. 2021), so the label holder decrypts ``k`` bins at the cost of one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vfl.errors import ProtocolError

HESSIAN_BITS = 53
"""Bits of the hessian field of a packed pair: any sum of up to all rows fits below ``2^53``."""

SUM_BITS = 51
"""A sum over all rows of ``|G_i|`` (or ``H_i``) stays below ``2^51``, for float64 exactness."""

SLOT_BITS = 107
"""Bits of one packed ``(G, H)`` sum: a signed ``G`` of up to 53 bits above 53 bits of ``H``."""

_MAX_FRACTION_BITS = 1000  # 2^-1000 is a normal float64: the grid stays representable


@dataclass(frozen=True)
class GradientScale:
    """The fixed-point grid ``2^-fraction_bits`` of one tree's gradients and hessians."""

    fraction_bits: int

    @classmethod
    def for_gradients(
        cls, gradients: npt.NDArray[np.float64], hessians: npt.NDArray[np.float64]
    ) -> GradientScale:
        """The finest grid on which the sum of all rows stays below ``2^SUM_BITS``."""
        rows = max(len(gradients), 1)
        largest = max(
            float(np.max(np.abs(gradients), initial=0.0)), float(np.max(hessians, initial=0.0))
        )
        if not math.isfinite(largest):
            raise ProtocolError("gradients or hessians are not finite; the model diverged")
        if largest == 0.0:
            largest = 1.0
        bits = SUM_BITS - math.ceil(math.log2(rows * largest))
        while bits > -_MAX_FRACTION_BITS and math.ldexp(rows * largest, bits) > 2.0**SUM_BITS:
            bits -= 1
        return cls(max(min(bits, _MAX_FRACTION_BITS), -_MAX_FRACTION_BITS))

    def to_integers(self, values: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
        """``round(values 2^P)`` as int64."""
        return np.rint(np.ldexp(values, self.fraction_bits)).astype(np.int64)

    def to_floats(
        self, integers: npt.NDArray[np.int64] | npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """``integers 2^-P`` (exact)."""
        return np.ldexp(np.asarray(integers, dtype=np.float64), -self.fraction_bits)

    def quantize(self, values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """``values`` moved onto the grid (what every party's sums are made of)."""
        return self.to_floats(self.to_integers(values))


def pack_pairs(gradients: npt.NDArray[np.int64], hessians: npt.NDArray[np.int64]) -> list[int]:
    """One integer per row, ``G_i 2^53 + H_i`` (``H_i >= 0``)."""
    if (hessians < 0).any():
        raise ProtocolError("a hessian is negative; packing needs hessians >= 0")
    return [
        (g << HESSIAN_BITS) + h for g, h in zip(gradients.tolist(), hessians.tolist(), strict=True)
    ]


def unpack_pair(value: int) -> tuple[int, int]:
    """``(G, H)`` of a sum of packed pairs."""
    hessian = value & ((1 << HESSIAN_BITS) - 1)
    return value >> HESSIAN_BITS, hessian


def slots_per_plaintext(modulus_bits: int) -> int:
    """How many signed ``SLOT_BITS`` slots fit in a plaintext of a ``modulus_bits``-bit modulus.

    A packed value must stay inside ``(-n/2, n/2)`` to be read back as a signed integer.
    """
    count = (modulus_bits - 2) // SLOT_BITS
    if count < 1:
        raise ProtocolError(
            f"a {modulus_bits}-bit Paillier modulus cannot hold one {SLOT_BITS}-bit slot"
        )
    return count


def join_slots(values: Sequence[int]) -> int:
    """``sum_j values[j] 2^(SLOT_BITS j)`` (what the passive party computes under encryption)."""
    total = 0
    for value in reversed(values):
        total = (total << SLOT_BITS) + value
    return total


def split_slots(value: int, count: int) -> list[int]:
    """The ``count`` signed slots of a packed value, lowest first (inverse of ``join_slots``)."""
    mask, half = (1 << SLOT_BITS) - 1, 1 << (SLOT_BITS - 1)
    slots = []
    for _ in range(count):
        slot = value & mask
        if slot >= half:
            slot -= 1 << SLOT_BITS
        slots.append(slot)
        value = (value - slot) >> SLOT_BITS
    if value != 0:
        raise ProtocolError(
            f"a packed histogram held more than {count} slots; the sender packed it wrongly"
        )
    return slots


def signed(plaintext: int, modulus: int) -> int:
    """A Paillier plaintext in ``[0, n)`` read as a signed integer in ``(-n/2, n/2]``."""
    return plaintext - modulus if plaintext > modulus // 2 else plaintext
