"""C-VFL's compressors: stateless ``compress`` / ``decompress`` with real, bit-packed payloads.

Identity (b = 32), a dithered uniform scalar quantizer, a dithered 2-D hexagonal lattice
quantizer and top-k sparsification (C-VFL, Castiglia et al., ICML 2022, section 4 and
Appendix B), each registered once in ``vfl.compress.registry``; the bits they use per round come
from ``vfl.schedules``. ``docs/compression.md`` documents every wire layout and error bound.
"""

from vfl.compress.base import Compressed, Compressor, Quantizer
from vfl.compress.hexagonal import G_A2, HexCodebook, hexagonal_codebook
from vfl.compress.identity import Identity
from vfl.compress.lattice import LatticeQuantizer
from vfl.compress.ranges import Span
from vfl.compress.registry import (
    COMPRESSORS,
    available_compressors,
    make_compressor,
    register_compressor,
)
from vfl.compress.scalar import ScalarQuantizer, scalar_bits_for_error
from vfl.compress.topk import TopK

__all__ = [
    "COMPRESSORS",
    "G_A2",
    "Compressed",
    "Compressor",
    "HexCodebook",
    "Identity",
    "LatticeQuantizer",
    "Quantizer",
    "ScalarQuantizer",
    "Span",
    "TopK",
    "available_compressors",
    "hexagonal_codebook",
    "make_compressor",
    "register_compressor",
    "scalar_bits_for_error",
]
