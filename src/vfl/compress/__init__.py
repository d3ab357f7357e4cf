"""C-VFL's compressors: stateless ``compress`` / ``decompress`` with real, bit-packed payloads.

Identity (b = 32), a dithered uniform scalar quantizer, a dithered 2-D hexagonal lattice
quantizer and top-k sparsification (spec ``cvfl.md`` section 3), plus schedules for ``b`` over
rounds. ``docs/compression.md`` documents every wire layout and error bound.
"""

from vfl.compress.base import Compressed, Compressor, Quantizer
from vfl.compress.hexagonal import G_A2, HexCodebook, hexagonal_codebook
from vfl.compress.identity import Identity
from vfl.compress.lattice import LatticeQuantizer
from vfl.compress.ranges import Span
from vfl.compress.registry import COMPRESSORS, available_compressors, make_compressor
from vfl.compress.scalar import ScalarQuantizer
from vfl.compress.schedule import (
    BitSchedule,
    ConstantBits,
    DiminishingBits,
    StepBits,
    make_schedule,
    scalar_bits_for_error,
)
from vfl.compress.topk import TopK

__all__ = [
    "COMPRESSORS",
    "G_A2",
    "BitSchedule",
    "Compressed",
    "Compressor",
    "ConstantBits",
    "DiminishingBits",
    "HexCodebook",
    "Identity",
    "LatticeQuantizer",
    "Quantizer",
    "ScalarQuantizer",
    "Span",
    "StepBits",
    "TopK",
    "available_compressors",
    "hexagonal_codebook",
    "make_compressor",
    "make_schedule",
    "scalar_bits_for_error",
]
