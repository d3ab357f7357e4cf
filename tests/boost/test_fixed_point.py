from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.boost import fixed_point as fp
from vfl.errors import ProtocolError

slot_values = st.integers(-(2**105), 2**105)


@given(st.lists(slot_values, min_size=1, max_size=19))
def test_slots_round_trip_signed_values(values: list[int]) -> None:
    # Execute
    packed = fp.join_slots(values)

    # Assert
    assert fp.split_slots(packed, len(values)) == values


@given(st.lists(slot_values, min_size=2, max_size=19))
def test_reading_fewer_slots_than_were_packed_is_refused(values: list[int]) -> None:
    # Prepare: a nonzero top slot, so that dropping it cannot go unnoticed
    values[-1] = values[-1] or 1

    # Execute / Assert
    with pytest.raises(ProtocolError, match="more than"):
        fp.split_slots(fp.join_slots(values), len(values) - 1)


@settings(max_examples=50)
@given(
    data=st.data(),
    rows=st.integers(1, 300),
    magnitude=st.floats(1e-30, 1e30),
)
def test_sums_of_packed_pairs_unpack_to_the_exact_quantized_sums(
    data: st.DataObject, rows: int, magnitude: float
) -> None:
    # Prepare
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    g = rng.normal(size=rows) * magnitude
    h = rng.random(rows) * magnitude
    scale = fp.GradientScale.for_gradients(g, h)
    g_int, h_int = scale.to_integers(g), scale.to_integers(h)
    subset = rng.random(rows) < 0.5

    # Execute
    total = sum(v for v, keep in zip(fp.pack_pairs(g_int, h_int), subset, strict=True) if keep)
    g_sum, h_sum = fp.unpack_pair(total)

    # Assert: the integer sums, and float sums of the quantized values in any order agree
    assert (g_sum, h_sum) == (int(g_int[subset].sum()), int(h_int[subset].sum()))
    quantized = scale.to_floats(g_int)[subset]
    assert (
        float(np.sum(quantized))
        == float(np.sum(quantized[::-1]))
        == g_sum * 2.0**-scale.fraction_bits
    )
    assert abs(int(np.abs(g_int).sum())) < 2**52 and int(h_int.sum()) < 2**53


def test_the_grid_keeps_the_sum_of_all_rows_within_the_slot() -> None:
    # Prepare: the largest gradients a logistic tree sees, on many rows
    g = np.ones(1_000_000)

    # Execute
    scale = fp.GradientScale.for_gradients(g, g / 4)

    # Assert
    assert 2**50 < scale.to_integers(g).sum() <= 2**fp.SUM_BITS


def test_negative_hessians_cannot_be_packed() -> None:
    with pytest.raises(ProtocolError, match="negative"):
        fp.pack_pairs(np.array([1]), np.array([-1]))


def test_slots_per_plaintext_of_a_2048_bit_key() -> None:
    assert fp.slots_per_plaintext(2048) == 19
    with pytest.raises(ProtocolError, match="cannot hold"):
        fp.slots_per_plaintext(100)
