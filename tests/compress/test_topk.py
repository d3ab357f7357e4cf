from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.compress.strategies import tensors
from vfl.compress import TopK
from vfl.compress.topk import index_bits
from vfl.errors import ConfigError, WireError
from vfl.wire.bitpack import pack_bits

PROPERTY = settings(max_examples=25, deadline=None)
SETTINGS = [TopK(bits=2), TopK(bits=3, per_row=True), TopK(k=2), TopK(ratio=0.4, per_row=True)]
IDS = ["b2-shared", "b3-rows", "k2-shared", "ratio-rows"]


def rows(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(1, -1) if x.ndim == 1 else x


@pytest.mark.parametrize("topk", SETTINGS, ids=IDS)
@PROPERTY
@given(x=tensors(low=0.5, high=4.0), seed=st.integers(0, 100))
def test_exactly_k_entries_survive_per_row_or_per_shared_set(
    topk: TopK, x: torch.Tensor, seed: int
) -> None:
    # Prepare
    width = rows(x).shape[1]
    k = topk.kept(width)

    # Execute
    y = rows(topk.decompress(topk.compress(x, seed=seed), seed=seed))

    # Assert: inputs have no zeros, so every kept entry is non-zero
    assert ((y != 0).sum(dim=1) == k).all()
    if not topk.per_row:
        assert len({tuple(torch.nonzero(row).reshape(-1).tolist()) for row in y}) == 1
    kept = y != 0
    assert torch.equal(y[kept], rows(x)[kept])


@pytest.mark.parametrize("topk", SETTINGS, ids=IDS)
@PROPERTY
@given(x=tensors(low=-5.0, high=5.0))
def test_magnitude_selection_drops_at_most_the_1_minus_k_over_p_share(
    topk: TopK, x: torch.Tensor
) -> None:
    # Prepare
    width = rows(x).shape[1]
    energy = float((x.double() ** 2).sum())

    # Execute
    y = topk.decompress(topk.compress(x, seed=0), seed=0)

    # Assert
    dropped = float(((y.double() - x.double()) ** 2).sum())
    assert dropped <= (1 - topk.kept(width) / width) * energy * (1 + 1e-12) + 1e-30


def test_a_shared_set_ranks_columns_by_energy_not_by_their_sum() -> None:
    # Prepare: column 0 cancels out in a sum but holds most of the energy
    topk = TopK(k=1)
    x = torch.tensor([[5.0, 1.0], [-5.0, 1.0]])

    # Execute
    y = topk.decompress(topk.compress(x, seed=0), seed=0)

    # Assert
    assert y.tolist() == [[5.0, 0.0], [-5.0, 0.0]]
    assert float(((y - x) ** 2).sum()) <= topk.error_bound(x) == 26.0


def test_scores_choose_the_columns_instead_of_magnitudes() -> None:
    # Prepare
    topk = TopK(k=2)
    x = torch.tensor([[9.0, 1.0, 2.0, 8.0], [7.0, 1.0, 3.0, 9.0]])
    scores = torch.tensor([0.1, -5.0, 4.0, 0.0])  # gradient magnitudes from the previous step

    # Execute
    y = topk.decompress(topk.compress(x, seed=0, scores=scores), seed=0)

    # Assert
    assert y.tolist() == [[0.0, 1.0, 2.0, 0.0], [0.0, 1.0, 3.0, 0.0]]
    assert topk.error_bound(x, scores=scores) == float((x**2).sum())
    assert topk.indices(x, scores=scores).tolist() == [1, 2]


def test_per_row_scores_pick_per_row_sets() -> None:
    # Prepare
    topk = TopK(k=1, per_row=True)
    x = torch.ones(2, 3)
    scores = torch.tensor([[0.0, 0.0, 1.0], [2.0, 0.0, 0.0]])

    # Execute
    chosen = topk.indices(x, scores=scores)

    # Assert
    assert chosen.tolist() == [[2], [0]]


@pytest.mark.parametrize(
    ("topk", "width", "k"),
    [
        (TopK(bits=2), 16, 1),  # ceil(16·2/32): the authors' MIMIC setting
        (TopK(bits=3), 16, 2),
        (TopK(bits=4), 16, 2),
        (TopK(bits=2), 64, 4),
        (TopK(bits=32), 10, 10),
        (TopK(ratio=0.07), 100, 7),  # not 8, although 0.07 * 100 = 7.000000000000001
        (TopK(ratio=0.01), 30, 1),
        (TopK(k=50), 30, 30),
    ],
)
def test_k_is_rounded_up_and_kept_between_1_and_p(topk: TopK, width: int, k: int) -> None:
    assert topk.kept(width) == k


def test_indices_travel_and_are_counted() -> None:
    # Prepare
    shared, per_row = TopK(bits=2), TopK(bits=2, per_row=True)
    shape = (128, 64)  # k = 4, 6-bit indices

    # Execute / Assert
    assert index_bits(64) == 6 and index_bits(65) == 7 and index_bits(1) == 0
    assert shared.message_bits(shape) == 32 * 128 * 4 + 4 * 6
    assert per_row.message_bits(shape) == 32 * 128 * 4 + 128 * 4 * 6
    assert shared.paper_bits(shape) == per_row.paper_bits(shape) == 32 * 128 * 4
    assert shared.message_bits((34_186,)) == (32 + 16) * 2137  # the MNIST head: k = 2137


def test_the_payload_is_values_then_packed_indices() -> None:
    # Prepare
    topk = TopK(k=2)
    x = torch.tensor([[0.0, 5.0, -1.0, 7.0, 0.5]])

    # Execute
    c = topk.compress(x, seed=0)

    # Assert
    values = np.array([5.0, 7.0], dtype="<f4").tobytes()
    assert c.payload == values + pack_bits(np.array([1, 3]), bits=3)


@pytest.mark.parametrize(
    "indices", [[3, 1], [2, 2], [1, 5]], ids=["descending", "repeated", "past-the-end"]
)
def test_malformed_indices_are_wire_errors(indices: list[int]) -> None:
    # Prepare
    topk = TopK(k=2)
    payload = np.zeros(2, dtype="<f4").tobytes() + pack_bits(np.array(indices), bits=3)
    c = topk.from_bytes(payload, (1, 5))

    # Execute / Assert
    with pytest.raises(WireError, match="ascending positions below P=5"):
        topk.decompress(c, seed=0)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "exactly one of bits, k, ratio; got none"),
        ({"bits": 2, "k": 3}, "got ['bits', 'k']"),
        ({"bits": 33}, "bits must be an integer in 1..32, got 33"),
        ({"k": 0}, "k must be an integer"),
        ({"ratio": 1.5}, "ratio must be a number in (0, 1], got 1.5"),
        ({"k": 1, "per_row": 1}, "per_row must be true or false, got 1"),
    ],
)
def test_invalid_parameters_are_named(params: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        TopK(**params)  # type: ignore[arg-type]
    assert message in str(info.value)


def test_scores_of_the_wrong_shape_are_config_errors() -> None:
    with pytest.raises(ConfigError, match=r"scores must have shape \(3,\) or the shape of x"):
        TopK(k=1).compress(torch.ones(2, 3), seed=0, scores=torch.ones(3, 2))


def test_a_single_column_needs_no_index_bits() -> None:
    # Prepare
    topk = TopK(bits=2)
    x = torch.tensor([[1.5], [-2.0]])

    # Execute
    c = topk.compress(x, seed=0)

    # Assert
    assert len(c.payload) == 8 == math.ceil(c.bits / 8)
    assert torch.equal(topk.decompress(c, seed=0), x)
