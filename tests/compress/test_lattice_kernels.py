"""The compiled lattice loops give bit-identical output to the numpy reference they replace."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.compress.strategies import tensors
from vfl.compress import LatticeQuantizer, hexagonal_codebook, lattice_kernels
from vfl.compress.hexagonal import HexCodebook, cell_dither

pytestmark = pytest.mark.skipif(
    not lattice_kernels.AVAILABLE, reason="numba (the `fast` extra) is not installed"
)

# Unit-square coordinates: mostly inside, some overloaded, some far outside (a fixed range the
# input overshoots), and exact multiples of half the lattice step, where rounding ties.
COORDINATES = st.one_of(
    st.floats(-0.2, 1.2, allow_nan=False),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.integers(-8, 40).map(lambda k: k * hexagonal_codebook(2).delta / 2),
)


def reference_indices(codebook: HexCodebook, unit: np.ndarray, seed: int) -> np.ndarray:
    ux, uy = cell_dither(np.random.default_rng(seed), len(unit) // 2, codebook.delta)
    return codebook.nearest(unit[0::2] + ux, unit[1::2] + uy)


def compiled_indices(
    codebook: HexCodebook, unit: np.ndarray, draws: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    table, i0, j0 = codebook.lookup
    _, x, y = lattice_kernels.compiled()[0](
        unit, draws, codebook.delta, codebook.shift[0], codebook.shift[1], table, i0, j0
    )
    return lattice_kernels.nearest_codes(codebook, unit, draws), x, y


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
    unit=hnp.arrays(np.float64, st.integers(1, 64).map(lambda n: 2 * n), elements=COORDINATES),
    seed=st.integers(0, 2**32),
)
def test_encoding_matches_the_numpy_reference_bit_for_bit(
    bits: int, unit: np.ndarray, seed: int
) -> None:
    # Prepare
    codebook = hexagonal_codebook(bits)
    ux, uy = cell_dither(np.random.default_rng(seed), len(unit) // 2, codebook.delta)
    expected = reference_indices(codebook, unit, seed)

    # Execute
    draws = np.random.default_rng(seed).random(len(unit))
    index, x, y = compiled_indices(codebook, unit, draws)

    # Assert
    np.testing.assert_array_equal(index, expected)
    assert x.tobytes() == (unit[0::2] + ux).tobytes()
    assert y.tobytes() == (unit[1::2] + uy).tobytes()


@settings(max_examples=40, deadline=None)
@given(bits=st.integers(1, 8), count=st.integers(1, 300), seed=st.integers(0, 2**32))
def test_decoding_matches_the_numpy_reference_bit_for_bit(bits: int, count: int, seed: int) -> None:
    # Prepare
    codebook = hexagonal_codebook(bits)
    indices = np.random.default_rng(seed + 1).integers(0, codebook.size, count)
    ux, uy = cell_dither(np.random.default_rng(seed), count, codebook.delta)
    expected = np.empty(2 * count)
    expected[0::2] = codebook.x[indices] - ux
    expected[1::2] = codebook.y[indices] - uy

    # Execute
    draws = np.random.default_rng(seed).random(2 * count)
    unit = lattice_kernels.dithered_codewords(codebook, indices, draws)

    # Assert
    assert unit.tobytes() == expected.tobytes()


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
        patch.setattr(lattice_kernels, "AVAILABLE", False)
        reference = quantizer.compress(x, seed=seed)
        reference_out = quantizer.decompress(reference, seed=seed)

    # Execute
    compiled = quantizer.compress(x, seed=seed)
    compiled_out = quantizer.decompress(compiled, seed=seed)

    # Assert
    assert compiled.payload == reference.payload
    assert compiled_out.numpy().tobytes() == reference_out.numpy().tobytes()


def test_negative_control_one_changed_draw_changes_that_pair_only() -> None:
    # Prepare: the comparison above would pass vacuously if the loop ignored its draws
    codebook = hexagonal_codebook(3)
    unit = np.random.default_rng(0).random(200)
    draws = np.random.default_rng(1).random(200)
    changed = draws.copy()
    changed[7] = (changed[7] + 0.5) % 1.0

    # Execute
    _, x, _ = compiled_indices(codebook, unit, draws)
    _, x_changed, _ = compiled_indices(codebook, unit, changed)

    # Assert
    assert np.flatnonzero(x != x_changed).tolist() == [7]
