from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.compress.strategies import patterns, tensors
from vfl.compress import G_A2, LatticeQuantizer, hexagonal_codebook
from vfl.compress.hexagonal import cell_dither, lattice_coordinates
from vfl.errors import ConfigError, WireError
from vfl.wire.bitpack import pack_bits

STATISTICAL = settings(max_examples=10, deadline=None, derandomize=True)
DRAWS = 10


@settings(max_examples=40, deadline=None)
@given(
    bits=st.integers(1, 4),
    points=hnp.arrays(np.float64, (64, 2), elements=st.floats(-0.6, 1.6, allow_nan=False)),
)
def test_the_quantizer_returns_the_nearest_codeword(bits: int, points: np.ndarray) -> None:
    # Prepare
    codebook = hexagonal_codebook(bits)
    distances = ((points[:, None, :] - codebook.points[None, :, :]) ** 2).sum(axis=2)

    # Execute
    index = codebook.nearest(points[:, 0].copy(), points[:, 1].copy())

    # Assert
    chosen = distances[np.arange(len(points)), index]
    np.testing.assert_allclose(chosen, distances.min(axis=1), rtol=0, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(x=tensors(low=-3.0, high=3.0), bits=st.integers(1, 4), seed=st.integers(0, 2**32))
def test_each_sent_code_is_the_codeword_nearest_to_the_dithered_pair(
    x: torch.Tensor, bits: int, seed: int
) -> None:
    # Prepare
    quantizer = LatticeQuantizer(bits=bits, low=-1.0, high=1.0)
    codebook = hexagonal_codebook(bits)
    unit = np.clip((x.double().numpy().reshape(-1) + 1.0) / 2.0, 0.0, 1.0)
    unit = np.append(unit, 0.5) if len(unit) % 2 else unit
    ux, uy = cell_dither(np.random.default_rng(seed), len(unit) // 2, codebook.delta)
    dithered = np.stack([unit[0::2] + ux, unit[1::2] + uy], axis=1)

    # Execute
    codes = quantizer.codes(quantizer.compress(x, seed=seed))

    # Assert
    distances = ((dithered[:, None, :] - codebook.points[None, :, :]) ** 2).sum(axis=2)
    chosen = distances[np.arange(len(codes)), codes]
    np.testing.assert_allclose(chosen, distances.min(axis=1), rtol=0, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(points=hnp.arrays(np.float64, (32, 2), elements=st.floats(-5.0, 5.0, allow_nan=False)))
def test_lattice_rounding_finds_the_nearest_lattice_point(points: np.ndarray) -> None:
    # Prepare
    delta = 0.37
    i, j = np.meshgrid(np.arange(-30, 31), np.arange(-30, 31))
    lattice = np.stack([delta * (i + j / 2), delta * (math.sqrt(3) / 2) * j], axis=-1).reshape(
        -1, 2
    )

    # Execute
    ci, cj = lattice_coordinates(points[:, 0], points[:, 1], delta)

    # Assert
    found = np.stack([delta * (ci + cj / 2), delta * (math.sqrt(3) / 2) * cj], axis=1)
    best = ((points[:, None, :] - lattice[None]) ** 2).sum(axis=2).min(axis=1)
    np.testing.assert_allclose(((points - found) ** 2).sum(axis=1), best, atol=1e-12)


@pytest.mark.parametrize("bits", range(1, 7))
def test_the_codebook_covers_the_unit_square_with_at_most_4_to_the_b_codewords(bits: int) -> None:
    # Prepare
    codebook = hexagonal_codebook(bits)
    grid = np.linspace(0.0, 1.0, 101)
    gx, gy = (a.reshape(-1) for a in np.meshgrid(grid, grid))

    # Execute
    index = codebook.nearest(gx, gy)

    # Assert
    assert codebook.size <= 4**bits
    distance = np.hypot(gx - codebook.x[index], gy - codebook.y[index])
    assert distance.max() <= codebook.covering_radius * (1 + 1e-9)


@pytest.mark.parametrize(
    ("bits", "delta", "size"),
    [
        (1, 0.69282101585, 4),
        (2, 0.31491864357, 16),
        (3, 0.15061326431, 64),
        (4, 0.06928210158, 255),
    ],
)
def test_the_codebook_construction_is_pinned(bits: int, delta: float, size: int) -> None:
    # Execute
    codebook = hexagonal_codebook(bits)

    # Assert: sender and receiver must build the very same codebook
    assert codebook.delta == pytest.approx(delta, rel=1e-10)
    assert codebook.size == size


def test_the_cell_dither_is_uniform_over_the_hexagon() -> None:
    # Prepare
    delta = 0.5
    rng = np.random.default_rng(0)

    # Execute
    ux, uy = cell_dither(rng, 200_000, delta)

    # Assert
    i, j = lattice_coordinates(ux, uy, delta)
    assert not i.any() and not j.any()  # every dither lies in the cell of the origin
    cell_area = math.sqrt(3) / 2 * delta**2
    assert np.mean(ux**2) == pytest.approx(G_A2 * cell_area, rel=0.02)
    assert np.mean(uy**2) == pytest.approx(G_A2 * cell_area, rel=0.02)
    assert abs(np.mean(ux * uy)) < 0.02 * G_A2 * cell_area


def test_the_cell_dither_stream_is_pinned_for_wire_compatibility() -> None:
    # Execute
    ux, uy = cell_dither(np.random.default_rng(2**40 + 7), 2, 1.0)

    # Assert
    assert ux.tolist() == pytest.approx([-0.17018710817058702, -0.24469484165089583], abs=1e-15)
    assert uy.tolist() == pytest.approx([0.2663733335897628, 0.30225073959443155], abs=1e-15)


@STATISTICAL
@given(pattern=patterns(low=-1.0, high=1.0), bits=st.integers(2, 4))
def test_mse_away_from_the_edges_is_g_times_v_per_component(pattern: np.ndarray, bits: int) -> None:
    # Prepare
    quantizer = LatticeQuantizer(bits=bits, low=-1.0, high=1.0)
    margin = 2.0 * hexagonal_codebook(bits).covering_radius  # R range-widths, the range is 2 wide
    x = torch.from_numpy(np.resize(pattern * (1 - margin) * 0.999, (64, 64)).astype(np.float32))

    # Execute
    errors = np.concatenate(
        [
            (quantizer.decompress(quantizer.compress(x, seed=s), seed=s) - x).double().reshape(-1)
            for s in range(DRAWS)
        ]
    )

    # Assert
    expected = quantizer.noise_mse(x)
    assert expected == pytest.approx(G_A2 * quantizer.cell_area(x))
    assert np.mean(errors**2) == pytest.approx(expected, rel=0.05)


def test_codes_are_packed_at_2b_bits_per_pair_and_an_odd_tail_is_padded() -> None:
    # Prepare
    quantizer = LatticeQuantizer(bits=2, low=0.0, high=1.0)
    x = torch.tensor([[0.1, 0.2, 0.9], [0.5, 0.5, 0.7]])

    # Execute
    c = quantizer.compress(x, seed=4)

    # Assert
    codes = quantizer.codes(c)
    assert len(codes) == 3
    assert c.bits == 3 * 4 and len(c.payload) == 2
    assert c.payload == pack_bits(codes.astype(np.uint64), bits=4)
    assert quantizer.paper_bits(x.shape) == 6 * 2


def test_a_code_outside_the_codebook_is_a_wire_error() -> None:
    # Prepare
    quantizer = LatticeQuantizer(bits=4, low=0.0, high=1.0)  # 255 codewords: code 255 is unused
    c = quantizer.from_bytes(pack_bits(np.array([3, 255], dtype=np.uint64), bits=8), (4,))

    # Execute / Assert
    with pytest.raises(WireError, match="lattice code 255 is not a codeword"):
        quantizer.decompress(c, seed=0)


@pytest.mark.parametrize("bits", [0, 9])
def test_bits_outside_1_to_8_are_config_errors(bits: int) -> None:
    with pytest.raises(ConfigError, match=rf"bits must be an integer in 1\.\.8, got {bits}"):
        LatticeQuantizer(bits=bits)
