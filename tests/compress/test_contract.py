"""The contract every compressor meets; add each new compressor (or setting) to CASES."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.compress.strategies import tensors
from vfl.compress import (
    COMPRESSORS,
    Compressed,
    Compressor,
    TopK,
    make_compressor,
)
from vfl.config import CompressorConfig
from vfl.errors import ConfigError, WireError
from vfl.run.stages import compressor


def configured(name: str, bits: int = 32, **settings: Any) -> Compressor:
    """A compressor exactly as a run builds it from its ``[compress]`` table."""
    return compressor(CompressorConfig(name=name, bits=bits, **settings), bits)


FIXED = {"range": "fixed", "low": -1.0, "high": 1.0}
CASES: dict[str, Compressor] = {
    "identity": configured("identity"),
    "scalar-b2-fixed": configured("scalar", 2, **FIXED),
    "scalar-b3-message": configured("scalar", 3),
    "scalar-b16-message": configured("scalar", 16),
    "lattice-b1-message": configured("lattice", 1),
    "lattice-b2-fixed": configured("lattice", 2, **FIXED),
    "lattice-b3-message": configured("lattice", 3),
    "topk-b2-shared": configured("topk", 2),
    "topk-k3-rows": TopK(k=3, per_row=True),  # a fixed k: only the Python API sets one
    "topk-ratio": configured("topk", ratio=0.3),
}
SEEDS = st.integers(0, 2**63 - 1)
CONTRACT = settings(max_examples=12, deadline=None)


each_compressor = pytest.mark.parametrize("compressor", list(CASES.values()), ids=list(CASES))


def test_every_registered_compressor_is_in_the_contract() -> None:
    assert {type(c).name for c in CASES.values()} == set(COMPRESSORS)


@each_compressor
@CONTRACT
@given(x=tensors(low=-1.5, high=1.5), seed=SEEDS)
def test_round_trip_keeps_shape_and_dtype(
    compressor: Compressor, x: torch.Tensor, seed: int
) -> None:
    # Execute
    y = compressor.decompress(compressor.compress(x, seed=seed), seed=seed)

    # Assert
    assert y.shape == x.shape
    assert y.dtype == torch.float32


@each_compressor
@CONTRACT
@given(x=tensors(low=-1.5, high=1.5), seed=SEEDS)
def test_error_stays_within_the_stated_bound(
    compressor: Compressor, x: torch.Tensor, seed: int
) -> None:
    # Execute
    y = compressor.decompress(compressor.compress(x, seed=seed), seed=seed)

    # Assert
    error = float(((y.double() - x.double()) ** 2).sum())
    assert error <= compressor.error_bound(x) * (1 + 1e-9) + 1e-30


@each_compressor
@CONTRACT
@given(x=tensors(), seed=SEEDS)
def test_payload_size_is_the_stated_bits_header_included(
    compressor: Compressor, x: torch.Tensor, seed: int
) -> None:
    # Execute
    c = compressor.compress(x, seed=seed)

    # Assert
    assert c.shape == tuple(x.shape)
    assert c.bits == compressor.message_bits(x.shape)
    assert len(c.payload) == compressor.encoded_size(x.shape) == math.ceil(c.bits / 8)
    assert compressor.paper_bits(x.shape) <= c.bits


@each_compressor
@CONTRACT
@given(x=tensors(), seed=SEEDS)
def test_same_seed_gives_the_same_payload_and_reconstruction(
    compressor: Compressor, x: torch.Tensor, seed: int
) -> None:
    # Execute
    first = compressor.compress(x, seed=seed)
    second = compressor.compress(x.clone(), seed=seed)

    # Assert
    assert first == second
    assert torch.equal(
        compressor.decompress(first, seed=seed), compressor.decompress(second, seed=seed)
    )


@each_compressor
@CONTRACT
@given(x=tensors(), seed=SEEDS)
def test_bytes_round_trip_through_a_message_field(
    compressor: Compressor, x: torch.Tensor, seed: int
) -> None:
    # Prepare
    sent = compressor.compress(x, seed=seed)

    # Execute
    received = compressor.from_bytes(memoryview(sent.to_bytes()), x.shape)

    # Assert
    assert received == sent
    assert torch.equal(
        compressor.decompress(received, seed=seed), compressor.decompress(sent, seed=seed)
    )


@each_compressor
@CONTRACT
@given(x=tensors(), seed=SEEDS, delta=st.sampled_from([-1, 1]))
def test_a_payload_of_the_wrong_length_is_a_wire_error(
    compressor: Compressor, x: torch.Tensor, seed: int, delta: int
) -> None:
    # Prepare
    good = compressor.compress(x, seed=seed)
    bad = good.payload + b"\x00" if delta > 0 else good.payload[:-1]

    # Execute / Assert
    with pytest.raises(WireError, match="must be"):
        compressor.from_bytes(bad, x.shape)
    with pytest.raises(WireError, match="must be"):
        compressor.decompress(Compressed(good.shape, bad, good.bits), seed=seed)


@each_compressor
def test_dithered_compressors_depend_on_the_seed(compressor: Compressor) -> None:
    # Prepare
    x = torch.linspace(-0.9, 0.9, 256).reshape(16, 16)
    c = compressor.compress(x, seed=1)

    # Execute
    same = compressor.decompress(c, seed=1)
    other = compressor.decompress(c, seed=2)

    # Assert
    assert torch.equal(same, other) != type(compressor).dithered


@pytest.mark.parametrize(
    "compressor",
    [c for c in CASES.values() if type(c).unbiased],
    ids=[name for name, c in CASES.items() if type(c).unbiased],
)
def test_unbiased_compressors_average_to_the_input(compressor: Compressor) -> None:
    # Prepare
    x = torch.linspace(-0.95, 0.95, 64).reshape(8, 8)
    draws = 400

    # Execute
    total = torch.zeros(x.shape, dtype=torch.float64)
    for seed in range(draws):
        total += compressor.decompress(compressor.compress(x, seed=seed), seed=seed)
    mean = total / draws

    # Assert
    spread = math.sqrt(compressor.error_bound(x) / x.numel() / draws)
    assert (mean - x).abs().max().item() <= 5 * spread + 1e-7


@each_compressor
@pytest.mark.parametrize(
    "bad",
    [
        torch.zeros(2, 2, dtype=torch.int64),
        torch.zeros(2, 2, 2),
        torch.zeros(0, 3),
        torch.tensor([1.0, math.nan]),
    ],
    ids=["integers", "3-d", "empty", "nan"],
)
def test_invalid_inputs_are_config_errors(compressor: Compressor, bad: torch.Tensor) -> None:
    with pytest.raises(ConfigError, match=r"x must|shape must"):
        compressor.compress(bad, seed=0)


@each_compressor
def test_a_negative_seed_is_a_config_error(compressor: Compressor) -> None:
    with pytest.raises(ConfigError, match="seed must be a non-negative integer, got -1"):
        compressor.compress(torch.zeros(3), seed=-1)


@each_compressor
def test_the_registry_builds_each_case_from_its_parameters(compressor: Compressor) -> None:
    # Prepare
    params = {k: v for k, v in vars(compressor).items() if not k.startswith("_")}

    # Execute
    built = make_compressor(type(compressor).name, **params)

    # Assert
    assert built == compressor


def test_the_registry_names_unknown_compressors_and_parameters() -> None:
    with pytest.raises(ConfigError, match="unknown compressor 'zip'; valid: 'identity', 'scalar'"):
        make_compressor("zip")
    with pytest.raises(ConfigError, match="no parameter 'level'; valid: bits, low, high"):
        make_compressor("scalar", bits=2, level=3)
    with pytest.raises(ConfigError, match=r"bits must be an integer in 1\.\.16, got 17"):
        make_compressor("scalar", bits=17)
