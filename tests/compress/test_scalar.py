from __future__ import annotations

import struct

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.compress.strategies import patterns
from vfl.compress import ScalarQuantizer
from vfl.errors import ConfigError, WireError

STATISTICAL = settings(max_examples=15, deadline=None, derandomize=True)
DRAWS = 10


def dithered_errors(quantizer: ScalarQuantizer, x: torch.Tensor) -> np.ndarray:
    """Reconstruction errors of ``x`` over DRAWS seeds, in units of the step Δ."""
    step = quantizer.step(x)
    errors = [
        (quantizer.decompress(quantizer.compress(x, seed=s), seed=s).double() - x.double()).numpy()
        for s in range(DRAWS)
    ]
    return np.concatenate([e.reshape(-1) for e in errors]) / step


def tiled(pattern: np.ndarray, rows: int = 64, cols: int = 64) -> torch.Tensor:
    return torch.from_numpy(np.resize(pattern, (rows, cols)).astype(np.float32))


@STATISTICAL
@given(pattern=patterns(low=-1.0, high=1.0), bits=st.integers(1, 8))
@example(pattern=np.zeros(16), bits=2)  # every input on a level: undithered error would be 0
@example(pattern=np.full(16, -1.0 + 1.0 / 3.0), bits=2)  # every input mid-way between levels
def test_dithered_error_is_uniform_on_half_a_step_whatever_the_input(
    pattern: np.ndarray, bits: int
) -> None:
    # Prepare
    quantizer = ScalarQuantizer(bits=bits, low=-1.0, high=1.0)
    x = tiled(pattern)

    # Execute
    errors = np.sort(dithered_errors(quantizer, x))

    # Assert
    assert errors.min() >= -0.5 - 1e-5 and errors.max() <= 0.5 + 1e-5
    uniform = (np.arange(1, len(errors) + 1) - 0.5) / len(errors) - 0.5
    assert np.abs(errors - uniform).max() < 0.02  # Kolmogorov-Smirnov distance to U[-1/2, 1/2]
    assert abs(np.mean(errors**2) * 12 - 1) < 0.05  # MSE = Δ²/12 within 5%


@STATISTICAL
@given(pattern=patterns(low=-50.0, high=50.0), bits=st.integers(2, 6))
def test_error_is_uncorrelated_with_the_position_inside_a_step(
    pattern: np.ndarray, bits: int
) -> None:
    # Prepare
    quantizer = ScalarQuantizer(bits=bits)
    x = tiled(pattern + np.linspace(0, 1, len(pattern)))  # never constant
    span = quantizer.span(x)
    position = np.tile(
        (((x.double().numpy() - span.low) / quantizer.step(x)) % 1).reshape(-1), DRAWS
    )

    # Execute
    errors = dithered_errors(quantizer, x)

    # Assert
    assert abs(np.mean(errors**2) * 12 - 1) < 0.05
    assert abs(np.corrcoef(errors, position)[0, 1]) < 0.05


def test_two_bit_codes_pack_four_per_byte_after_the_range_header() -> None:
    # Prepare
    quantizer = ScalarQuantizer(bits=2)
    x = torch.tensor([[-2.0, 0.0, 1.0, 4.0], [4.0, 4.0, -2.0, -2.0]])

    # Execute
    c = quantizer.compress(x, seed=3)

    # Assert
    assert len(c.payload) == 8 + 2
    assert struct.unpack("<ff", c.payload[:8]) == (-2.0, 4.0)
    assert c.bits == 64 + 8 * 2 == quantizer.paper_bits(x.shape) + 64
    codes = quantizer.codes(c)
    assert codes[[0, 3, 4, 5, 6, 7]].tolist() == [0, 3, 3, 3, 0, 0]  # the range's ends are levels
    assert int(c.payload[8]) == int(codes[0] | codes[1] << 2 | codes[2] << 4 | codes[3] << 6)


def test_a_fixed_range_clips_and_its_bound_counts_the_overload() -> None:
    # Prepare
    quantizer = ScalarQuantizer(bits=3, low=0.0, high=1.0)
    x = torch.tensor([-0.5, 0.5, 2.0])

    # Execute
    y = quantizer.decompress(quantizer.compress(x, seed=0), seed=0)

    # Assert
    half = 0.5 / 7
    assert abs(y[0].item() - 0.0) <= half + 1e-6 and abs(y[2].item() - 1.0) <= half + 1e-6
    bound = quantizer.error_bound(x)
    assert bound == pytest.approx((half + 0.5) ** 2 + half**2 + (half + 1.0) ** 2, rel=1e-5)
    assert float(((y - x) ** 2).sum()) <= bound


def test_a_constant_message_is_rebuilt_exactly() -> None:
    # Prepare
    quantizer = ScalarQuantizer(bits=2)
    x = torch.full((5, 3), 0.75)

    # Execute
    y = quantizer.decompress(quantizer.compress(x, seed=9), seed=9)

    # Assert
    assert torch.equal(y, x)


def test_a_range_header_that_is_not_a_range_is_a_wire_error() -> None:
    # Prepare
    quantizer = ScalarQuantizer(bits=4)
    good = quantizer.compress(torch.arange(6.0), seed=0)
    bad = quantizer.from_bytes(struct.pack("<ff", 3.0, 1.0) + good.payload[8:], (6,))

    # Execute / Assert
    with pytest.raises(WireError, match=r"invalid per-message range \[3.0, 1.0\]"):
        quantizer.decompress(bad, seed=0)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"bits": 0}, "bits must be an integer in 1..16, got 0"),
        ({"bits": 2.0}, "bits must be an integer in 1..16, got 2.0"),
        ({"bits": 2, "low": -1.0}, "give both low and high"),
        ({"bits": 2, "low": 1.0, "high": 1.0}, "low < high, got [1.0, 1.0]"),
        ({"bits": 2, "low": 0.0, "high": float("inf")}, "must be finite"),
    ],
)
def test_invalid_parameters_are_named(params: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        ScalarQuantizer(**params)  # type: ignore[arg-type]
    assert message in str(info.value)


def test_the_dither_stream_is_pinned_for_wire_compatibility() -> None:
    # Prepare: sender and receiver must draw the same dither in any process and numpy version
    quantizer = ScalarQuantizer(bits=1, low=0.0, high=1.0)
    x = torch.full((3,), 0.5)

    # Execute
    y = quantizer.decompress(quantizer.compress(x, seed=2**40 + 7), seed=2**40 + 7)

    # Assert: u = 0.3298..., -0.2446..., -0.3462...; codes 1, 0, 0; y = code - u
    expected = [1 - 0.329812891829413, 0.24469484165089583, 0.34620928414701246]
    assert y.tolist() == pytest.approx(expected, abs=1e-7)
