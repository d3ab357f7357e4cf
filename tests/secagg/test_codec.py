from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vfl.errors import ConfigError, WireError
from vfl.secagg import decode_masked, encode_masked, masked_size


@given(
    data=st.data(), bits=st.integers(1, 64), shape=st.tuples(st.integers(0, 9), st.integers(1, 9))
)
def test_encode_then_decode_is_the_identity_in_ceil_bpk_over_8_bytes(
    data: st.DataObject, bits: int, shape: tuple[int, int]
) -> None:
    # Prepare
    count = shape[0] * shape[1]
    values = data.draw(st.lists(st.integers(0, 2**bits - 1), min_size=count, max_size=count))
    block = np.array(values, dtype=np.uint64).reshape(shape)

    # Execute
    payload = encode_masked(block, bits=bits)
    decoded = decode_masked(payload, shape=shape, bits=bits)

    # Assert
    assert len(payload) == masked_size(shape, bits=bits) == -(-shape[0] * shape[1] * bits // 8)
    assert decoded.dtype == np.uint64 and decoded.shape == shape
    assert decoded.tolist() == block.tolist()


def test_a_128_by_64_block_of_11_bit_values_takes_11264_bytes() -> None:
    # Prepare
    block = np.full((128, 64), 2047, dtype=np.uint64)

    # Execute
    payload = encode_masked(block, bits=11)

    # Assert
    assert len(payload) == 128 * 64 * 11 // 8 == 11264


@pytest.mark.parametrize("size", [2, 4])
def test_payload_of_wrong_length_is_a_wire_error(size: int) -> None:
    with pytest.raises(WireError, match=f"need 3 bytes, got {size}"):
        decode_masked(bytes(size), shape=(2, 3), bits=4)


def test_non_zero_padding_is_a_non_canonical_payload() -> None:
    # Prepare: 3 values of 3 bits use 9 bits; bits 9..15 of the second byte must be zero
    payload = bytearray(encode_masked(np.array([1, 2, 3], dtype=np.uint64), bits=3))
    payload[1] |= 0b1000_0000

    # Execute / Assert
    with pytest.raises(WireError, match="padding"):
        decode_masked(bytes(payload), shape=(3,), bits=3)


def test_values_that_do_not_fit_in_k_bits_are_refused() -> None:
    with pytest.raises(ValueError, match="does not fit in 4 bits"):
        encode_masked(np.array([16], dtype=np.uint64), bits=4)


@pytest.mark.parametrize("bits", [0, 65])
def test_bits_outside_1_to_64_are_config_errors(bits: int) -> None:
    with pytest.raises(ConfigError, match=f"got {bits}"):
        encode_masked(np.zeros(2, dtype=np.uint64), bits=bits)
    with pytest.raises(ConfigError, match=f"got {bits}"):
        decode_masked(b"", shape=(0,), bits=bits)


def test_negative_shape_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="non-negative integers"):
        decode_masked(b"", shape=(-1, 2), bits=4)
