"""The compiled lattice loops give bit-identical output to the numpy reference they replace."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.compress.strategies import tensors
from vfl.compress import LatticeQuantizer, hexagonal_codebook, lattice_kernels
from vfl.compress.hexagonal import HexCodebook, cell_dither
from vfl.compress.lattice import PAD_VALUE
from vfl.compress.ranges import Span
from vfl.errors import WireError
from vfl.wire.bitpack import pack_bits, unpack_bits

pytestmark = pytest.mark.skipif(
    not lattice_kernels.available(), reason="numba (the `fast` extra) is not installed"
)

# Values in a unit span: mostly inside, some overloaded, some far outside (clipped), and exact
# multiples of half the lattice step, where rounding ties.
COORDINATES = st.one_of(
    st.floats(-0.2, 1.2, allow_nan=False),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.integers(-8, 40).map(lambda k: k * hexagonal_codebook(2).delta / 2),
)
UNIT = Span(0.0, 1.0)


def reference_unit(values: np.ndarray, span: Span) -> np.ndarray:
    unit = span.to_unit(values)
    return np.append(unit, PAD_VALUE) if len(unit) % 2 else unit


def compiled_pairs(
    codebook: HexCodebook, values: np.ndarray, span: Span, draws: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The loop's codes (overloads resolved) and its dithered pairs."""
    table, i0, j0 = codebook.lookup
    _, x, y, _ = lattice_kernels.compiled()[0](
        values, span.low, span.width or 1.0, PAD_VALUE, draws, codebook.delta,
        codebook.shift[0], codebook.shift[1], table, i0, j0,
    )  # fmt: skip
    return lattice_kernels.nearest_codes(codebook, values, span, PAD_VALUE, draws), x, y


def test_the_loops_are_compiled() -> None:
    # Prepare
    import numba

    # Execute
    kernels = lattice_kernels.compiled()

    # Assert
    assert all(isinstance(k, numba.core.registry.CPUDispatcher) for k in kernels)


@settings(max_examples=60, deadline=None)
@given(
    bits=st.integers(1, 8),
    values=hnp.arrays(np.float64, st.integers(1, 128), elements=COORDINATES),
    seed=st.integers(0, 2**32),
)
def test_encoding_matches_the_numpy_reference_bit_for_bit(
    bits: int, values: np.ndarray, seed: int
) -> None:
    # Prepare
    codebook = hexagonal_codebook(bits)
    unit = reference_unit(values, UNIT)
    ux, uy = cell_dither(np.random.default_rng(seed), len(unit) // 2, codebook.delta)
    expected = codebook.nearest(unit[0::2] + ux, unit[1::2] + uy)

    # Execute
    draws = np.random.default_rng(seed).random(len(unit))
    index, x, y = compiled_pairs(codebook, values, UNIT, draws)

    # Assert
    np.testing.assert_array_equal(index, expected)
    assert x.tobytes() == (unit[0::2] + ux).tobytes()
    assert y.tobytes() == (unit[1::2] + uy).tobytes()


@settings(max_examples=40, deadline=None)
@given(
    bits=st.integers(1, 8),
    values=hnp.arrays(np.float32, st.integers(1, 128), elements=st.floats(-4, 4, width=32)),
    low=st.floats(-3, 0),
    width=st.sampled_from([0.0, 0.5, 1.0, 3.0]),
    seed=st.integers(0, 2**32),
)
def test_float32_values_are_scaled_to_the_unit_square_as_the_span_does(
    bits: int, values: np.ndarray, low: float, width: float, seed: int
) -> None:
    # Prepare
    codebook = hexagonal_codebook(bits)
    span = Span(low, width)
    unit = reference_unit(values, span)
    ux, uy = cell_dither(np.random.default_rng(seed), len(unit) // 2, codebook.delta)

    # Execute
    draws = np.random.default_rng(seed).random(len(unit))
    index, x, y = compiled_pairs(codebook, values, span, draws)

    # Assert
    np.testing.assert_array_equal(index, codebook.nearest(unit[0::2] + ux, unit[1::2] + uy))
    assert x.tobytes() == (unit[0::2] + ux).tobytes()
    assert y.tobytes() == (unit[1::2] + uy).tobytes()


@settings(max_examples=40, deadline=None)
@given(
    bits=st.integers(1, 8),
    size=st.integers(1, 300),
    low=st.floats(-3, 3),
    width=st.floats(0, 5),
    seed=st.integers(0, 2**32),
)
def test_decoding_matches_the_numpy_reference_bit_for_bit(
    bits: int, size: int, low: float, width: float, seed: int
) -> None:
    # Prepare
    codebook = hexagonal_codebook(bits)
    span = Span(low, width)
    count = -(-size // 2)
    indices = np.random.default_rng(seed + 1).integers(0, codebook.size, count)
    ux, uy = cell_dither(np.random.default_rng(seed), count, codebook.delta)
    unit = np.empty(2 * count)
    unit[0::2] = codebook.x[indices] - ux
    unit[1::2] = codebook.y[indices] - uy
    expected = span.from_unit(unit[:size]).astype(np.float32)

    # Execute
    draws = np.random.default_rng(seed).random(2 * count)
    values = lattice_kernels.dithered_values(codebook, indices, span, draws, size)

    # Assert
    assert values.tobytes() == expected.tobytes()


@settings(max_examples=40, deadline=None)
@given(
    x=tensors(low=-3.0, high=3.0),
    bits=st.integers(1, 8),
    fixed=st.booleans(),
    seed=st.integers(0, 2**32),
)
def test_the_quantizer_sends_and_decodes_the_same_bytes_with_and_without_the_kernels(
    x: torch.Tensor, bits: int, fixed: bool, seed: int
) -> None:
    # Prepare
    bounds = {"low": -1.0, "high": 1.0} if fixed else {}
    quantizer = LatticeQuantizer(bits=bits, **bounds)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lattice_kernels, "available", lambda: False)
        reference = quantizer.compress(x, seed=seed)
        reference_out = quantizer.decompress(reference, seed=seed)

    # Execute
    compiled = quantizer.compress(x, seed=seed)
    compiled_out = quantizer.decompress(compiled, seed=seed)

    # Assert
    assert compiled.payload == reference.payload
    assert compiled_out.numpy().tobytes() == reference_out.numpy().tobytes()


def test_negative_control_one_changed_draw_changes_that_pair_only() -> None:
    # Prepare: the comparisons above would pass vacuously if the loop ignored its draws
    codebook = hexagonal_codebook(3)
    values = np.random.default_rng(0).random(200)
    draws = np.random.default_rng(1).random(200)
    changed = draws.copy()
    changed[7] = (changed[7] + 0.5) % 1.0

    # Execute
    _, x, _ = compiled_pairs(codebook, values, UNIT, draws)
    _, x_changed, _ = compiled_pairs(codebook, values, UNIT, changed)

    # Assert
    assert np.flatnonzero(x != x_changed).tolist() == [7]


@st.composite
def codes(draw: st.DrawFn) -> tuple[np.ndarray, int]:
    bits = draw(st.integers(1, 16))
    values = draw(hnp.arrays(np.int64, st.integers(0, 200), elements=st.integers(0, 2**bits - 1)))
    return values, bits


@settings(max_examples=80, deadline=None)
@given(case=codes())
def test_packing_gives_the_bytes_of_the_shared_bit_packer(case: tuple[np.ndarray, int]) -> None:
    # Prepare
    values, bits = case
    expected = pack_bits(values.astype(np.uint64), bits=bits)

    # Execute
    packed = lattice_kernels.pack_codes(values, bits)
    unpacked = lattice_kernels.unpack_codes(memoryview(packed), bits, len(values))

    # Assert
    assert packed == expected
    np.testing.assert_array_equal(unpacked, values)


@settings(max_examples=40, deadline=None)
@given(case=codes(), position=st.integers(0, 7))
def test_a_set_padding_bit_is_a_wire_error_as_in_the_shared_unpacker(
    case: tuple[np.ndarray, int], position: int
) -> None:
    # Prepare
    values, bits = case
    used = len(values) * bits
    assume(used % 8 and position >= used % 8)
    data = bytearray(pack_bits(values.astype(np.uint64), bits=bits))
    data[-1] |= 1 << position

    # Execute, Assert
    with pytest.raises(WireError, match="padding"):
        unpack_bits(bytes(data), bits=bits, count=len(values))
    with pytest.raises(WireError, match="padding"):
        lattice_kernels.unpack_codes(memoryview(bytes(data)), bits, len(values))


def test_a_body_of_the_wrong_length_is_a_wire_error() -> None:
    # Prepare
    packed = lattice_kernels.pack_codes(np.arange(10, dtype=np.int64), 4)

    # Execute, Assert
    with pytest.raises(WireError, match="need 5 bytes, got 6"):
        lattice_kernels.unpack_codes(memoryview(packed + b"\0"), 4, 10)
