from __future__ import annotations

import struct

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.secagg.stats import chi_square_critical, uniformity_statistic
from vfl.errors import ConfigError
from vfl.secagg import apply_masks, pair_mask, required_bits
from vfl.secagg.masks import sum_mod

SEED_A = bytes(range(32))
SEED_B = bytes(range(1, 33))


def reference_mask(seed: bytes, *, round: int, channel: int, count: int, bits: int) -> list[int]:
    """The documented layout, one value at a time in plain Python integers."""
    width = -(-bits // 8)
    nonce = struct.pack("<IQI", 0, round, channel)
    stream = (
        Cipher(algorithms.ChaCha20(seed, nonce), mode=None).encryptor().update(bytes(count * width))
    )
    return [
        int.from_bytes(stream[n * width : (n + 1) * width], "little") % 2**bits
        for n in range(count)
    ]


@given(num_parties=st.integers(2, 10_000), max_count=st.integers(1, 10**6))
def test_required_bits_is_the_least_k_that_holds_the_largest_sum(
    num_parties: int, max_count: int
) -> None:
    # Execute
    bits = required_bits(num_parties=num_parties, max_count=max_count)

    # Assert
    assert 2 ** (bits - 1) <= num_parties * max_count < 2**bits


def test_required_bits_matches_the_spec_table() -> None:
    # specs/pbm.md section 1.6: (M, b) -> bits per masked value
    table = {(4, 16): 7, (4, 64): 9, (4, 256): 11, (6, 4): 5, (6, 64): 9, (12, 4): 6, (12, 64): 10}
    for (num_parties, max_count), bits in table.items():
        assert required_bits(num_parties=num_parties, max_count=max_count) == bits


@pytest.mark.parametrize(
    ("num_parties", "max_count", "message"),
    [(1, 16, "at least 2 parties, got 1"), (4, 0, "must be >= 1, got 0")],
)
def test_required_bits_refuses_degenerate_settings(
    num_parties: int, max_count: int, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        required_bits(num_parties=num_parties, max_count=max_count)


@settings(max_examples=60)
@given(
    bits=st.integers(1, 64),
    shape=st.tuples(st.integers(0, 5), st.integers(1, 7)),
    round=st.integers(0, 2**64 - 1),
    channel=st.integers(0, 2**32 - 1),
    seed=st.binary(min_size=32, max_size=32),
)
def test_pair_mask_follows_the_documented_keystream_layout(
    bits: int, shape: tuple[int, int], round: int, channel: int, seed: bytes
) -> None:
    # Prepare
    count = shape[0] * shape[1]

    # Execute
    mask = pair_mask(seed, round=round, channel=channel, shape=shape, bits=bits)

    # Assert
    assert mask.dtype == np.uint64 and mask.shape == shape
    expected = reference_mask(seed, round=round, channel=channel, count=count, bits=bits)
    assert [int(v) for v in mask.reshape(-1)] == expected


@settings(max_examples=60)
@given(data=st.data(), num_parties=st.integers(2, 16), bits=st.integers(1, 64))
def test_masks_cancel_exactly_mod_2_to_the_k(
    data: st.DataObject, num_parties: int, bits: int
) -> None:
    # Prepare: pair seeds shared symmetrically, counts whose true sum stays below 2^k
    shape = data.draw(st.tuples(st.integers(0, 6), st.integers(1, 6)))
    ids = sorted(
        data.draw(st.sets(st.integers(1, 65535), min_size=num_parties, max_size=num_parties))
    )
    pair_seeds = {
        (a, b): data.draw(st.binary(min_size=32, max_size=32)) for a in ids for b in ids if a < b
    }
    max_count = (2**bits - 1) // num_parties
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    counts = {
        i: rng.integers(0, max_count, size=shape, endpoint=True).astype(np.uint64) for i in ids
    }
    round = data.draw(st.integers(0, 2**32 - 1))

    # Execute
    masked = [
        apply_masks(
            counts[i],
            {j: pair_seeds[min(i, j), max(i, j)] for j in ids if j != i},
            party_id=i,
            round=round,
            bits=bits,
        )
        for i in ids
    ]
    total = sum_mod(masked, bits=bits)

    # Assert
    assert total.tolist() == sum(counts.values(), np.zeros(shape, np.uint64)).tolist()
    assert all(int(block.max(initial=0)) < 2**bits for block in masked)


@settings(max_examples=40)
@given(data=st.data(), bits=st.integers(1, 64), party_id=st.integers(1, 6))
def test_apply_masks_adds_higher_peers_and_subtracts_lower_ones(
    data: st.DataObject, bits: int, party_id: int
) -> None:
    # Prepare
    shape = data.draw(st.tuples(st.integers(0, 4), st.integers(1, 5)))
    seeds = {j: bytes([j]) * 32 for j in range(1, 7) if j != party_id}
    values = data.draw(
        st.lists(
            st.integers(0, 2**bits - 1), min_size=shape[0] * shape[1], max_size=shape[0] * shape[1]
        )
    )
    counts = np.array(values, dtype=np.uint64).reshape(shape)

    # Execute
    masked = apply_masks(counts, seeds, party_id=party_id, round=9, channel=2, bits=bits)

    # Assert: the same as the formula in plain Python integers
    expected = [int(v) for v in counts.reshape(-1)]
    for j, seed in seeds.items():
        mask = pair_mask(seed, round=9, channel=2, shape=shape, bits=bits).reshape(-1)
        sign = 1 if j > party_id else -1
        expected = [(e + sign * int(m)) % 2**bits for e, m in zip(expected, mask, strict=True)]
    assert masked.dtype == np.uint64
    assert [int(v) for v in masked.reshape(-1)] == expected


def test_masks_are_fresh_for_every_round_channel_and_seed() -> None:
    # Prepare
    shape = (16, 8)
    base = pair_mask(SEED_A, round=7, channel=0, shape=shape, bits=64)

    # Execute
    others = [
        pair_mask(SEED_A, round=8, channel=0, shape=shape, bits=64),
        pair_mask(SEED_A, round=7, channel=1, shape=shape, bits=64),
        pair_mask(SEED_B, round=7, channel=0, shape=shape, bits=64),
    ]

    # Assert: no coordinate repeats (each coincidence has probability 2^-64)
    for other in others:
        assert not (other == base).any()
    assert len(np.unique(base)) == base.size


def test_masks_differ_between_samples_and_coordinates() -> None:
    # Prepare
    mask = pair_mask(SEED_A, round=0, shape=(64, 32), bits=8)

    # Execute
    distinct_rows = {row.tobytes() for row in mask}
    distinct_columns = {column.tobytes() for column in mask.T}

    # Assert
    assert len(distinct_rows) == 64 and len(distinct_columns) == 32


@pytest.mark.parametrize("bits", [4, 12, 20])
def test_pair_mask_is_uniform_on_z_2_to_the_k(bits: int) -> None:
    # Prepare
    view = min(bits, 6)

    # Execute: the low bits of 12-bit and 20-bit masks must be uniform too
    mask = pair_mask(SEED_A, round=3, shape=(128, 64), bits=bits) % 2**view

    # Assert
    assert uniformity_statistic(mask, bins=2**view) < chi_square_critical(2**view - 1)


def test_apply_masks_refuses_a_seed_with_itself() -> None:
    with pytest.raises(ConfigError, match="party 3 cannot hold a pair seed with itself"):
        apply_masks(np.zeros(4, np.uint64), {3: SEED_A}, party_id=3, round=0, bits=8)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bits": 0}, "bits \\(k\\) must be in 1..64, got 0"),
        ({"bits": 65}, "got 65"),
        ({"round": -1}, "round must be in 0..18446744073709551615, got -1"),
        ({"round": 2**64}, "got 18446744073709551616"),
        ({"channel": 2**32}, "channel must be in 0..4294967295"),
        ({"shape": (2, -1)}, "non-negative integers, got \\(2, -1\\)"),
    ],
)
def test_pair_mask_refuses_out_of_range_parameters(kwargs: dict[str, object], message: str) -> None:
    # Prepare
    arguments: dict[str, object] = {"round": 0, "channel": 0, "shape": (2, 2), "bits": 8}
    arguments.update(kwargs)

    # Execute / Assert
    with pytest.raises(ConfigError, match=message):
        pair_mask(SEED_A, **arguments)  # type: ignore[arg-type]
