from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.secagg.helpers import connect, fixed_key_pair, mask_all
from tests.secagg.stats import (
    assert_masked,
    chi_square_critical,
    independence_statistic,
    uniformity_statistic,
)
from vfl.errors import ConfigError, ProtocolError, WireError
from vfl.secagg import (
    KeyPair,
    SecAggParams,
    ServerState,
    aggregate,
    decode_masked,
    encode_masked,
    make_params,
    mask,
    pair_mask,
    relay_public_keys,
    setup_party,
    share_keys,
    unmask,
)

RUN = b"test-run"


def random_counts(params: SecAggParams, shape: tuple[int, ...], seed: int) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        i: rng.integers(0, params.max_count, size=shape, endpoint=True) for i in params.party_ids
    }


def true_sum(counts: Mapping[int, np.ndarray]) -> list[Any]:
    total = sum(c.astype(np.int64) for c in counts.values())
    assert isinstance(total, np.ndarray)
    result: list[Any] = total.tolist()
    return result


@settings(max_examples=25, deadline=None)
@given(
    data=st.data(),
    num_parties=st.integers(2, 16),
    max_count=st.integers(1, 300),
    shape=st.tuples(st.integers(1, 8), st.integers(1, 8)),
    round=st.integers(0, 2**32 - 1),
)
def test_stages_recover_exactly_the_sum_of_counts(
    data: st.DataObject, num_parties: int, max_count: int, shape: tuple[int, int], round: int
) -> None:
    # Prepare
    needed = (num_parties * max_count).bit_length()
    bits = data.draw(st.integers(needed, 64))
    params = make_params(
        run_id=RUN, party_ids=range(1, num_parties + 1), max_count=max_count, bits=bits
    )
    server, parties = connect(params)
    counts = random_counts(params, shape, seed=round)

    # Execute
    total = unmask(server, mask_all(parties, counts, round=round))

    # Assert
    assert total.dtype == np.uint64
    assert total.tolist() == true_sum(counts)


def test_one_partys_masked_block_is_uniform_whatever_its_counts() -> None:
    # Prepare: k = 4 so that 16384 values fill 16 bins ~1024 times; constant counts
    params = make_params(run_id=RUN, party_ids=[1, 2, 3], max_count=5, bits=4)
    _, parties = connect(params)
    counts = {i: np.full((256, 64), 5) for i in params.party_ids}

    # Execute
    masked = mask_all(parties, counts, round=0)

    # Assert: every party's block, including the middle one that both adds and subtracts
    for block in masked.values():
        assert uniformity_statistic(block, bins=16) < chi_square_critical(15)


def test_the_uniformity_check_rejects_the_papers_non_modular_masks() -> None:
    # Prepare: Protocol 0 as printed, with integer masks in [0, b) and no modulus
    b = 5
    counts = np.full((256, 64), b)
    u_12 = pair_mask(bytes(32), round=0, shape=counts.shape, bits=8).astype(np.int64) % b
    u_21 = pair_mask(bytes(range(32)), round=0, shape=counts.shape, bits=8).astype(np.int64) % b

    # Execute
    leaked = counts + u_12 - u_21  # in [1, 2b - 1]: its range and shape depend on the count
    statistic = uniformity_statistic(leaked - leaked.min(), bins=2 * b - 1)

    # Assert
    assert statistic > chi_square_critical(2 * b - 2)


def test_server_receives_only_bytes_independent_of_each_partys_counts() -> None:
    # Prepare
    params = make_params(run_id=RUN, party_ids=[1, 2, 3], max_count=5, bits=4)
    server, parties = connect(params)
    shape = (128, 64)
    received: dict[int, list[np.ndarray]] = {i: [] for i in params.party_ids}
    held: dict[int, list[np.ndarray]] = {i: [] for i in params.party_ids}

    # Execute: the server side sees payload bytes only, and decodes them
    for round in range(6):
        counts = random_counts(params, shape, seed=round)
        payloads = {
            i: encode_masked(block, bits=params.bits)
            for i, block in mask_all(parties, counts, round=round).items()
        }
        blocks = {i: decode_masked(p, shape=shape, bits=params.bits) for i, p in payloads.items()}
        assert unmask(server, blocks).tolist() == true_sum(counts)
        for i in params.party_ids:
            assert payloads[i] != encode_masked(counts[i], bits=params.bits)
            received[i].append(blocks[i])
            held[i].append(counts[i])

    # Assert
    for i in params.party_ids:
        assert_masked(np.stack(received[i]), np.stack(held[i]), bits=params.bits)


def test_the_independence_check_rejects_masks_narrower_than_k() -> None:
    # Prepare: masks uniform on 3 bits only, sent mod 2^4
    counts = np.random.default_rng(0).integers(0, 5, size=(256, 64), endpoint=True)
    narrow = pair_mask(bytes(32), round=0, shape=counts.shape, bits=3)

    # Execute
    leaked = (counts.astype(np.uint64) + narrow) % 16
    statistic = independence_statistic(leaked.reshape(-1), counts.reshape(-1), bins=16)

    # Assert
    assert statistic > chi_square_critical(5 * 15)


def test_different_keys_give_different_masks_and_the_same_sums() -> None:
    # Prepare
    params = make_params(run_id=RUN, party_ids=[1, 2, 3, 4], max_count=16)
    counts = random_counts(params, (32, 16), seed=1)
    server_a, parties_a = connect(params, key_label="a")
    server_b, parties_b = connect(params, key_label=None)

    # Execute
    masked_a = mask_all(parties_a, counts, round=5)
    masked_b = mask_all(parties_b, counts, round=5)

    # Assert: equal values only by chance (1 in 2^7 per coordinate)
    for i in params.party_ids:
        assert (masked_a[i] == masked_b[i]).mean() < 0.05
    assert unmask(server_a, masked_a).tolist() == unmask(server_b, masked_b).tolist()
    assert unmask(server_a, masked_a).tolist() == true_sum(counts)


def test_masks_change_every_round_and_channel_with_the_same_counts() -> None:
    # Prepare
    params = make_params(run_id=RUN, party_ids=[1, 2], max_count=1, bits=64)
    _, parties = connect(params)
    counts = {1: np.zeros((8, 8), np.int64), 2: np.zeros((8, 8), np.int64)}

    # Execute
    first = mask_all(parties, counts, round=1)
    second = mask_all(parties, counts, round=1, channel=1)
    third = mask_all(parties, counts, round=2)

    # Assert
    assert not (first[1] == second[1]).any() and not (first[1] == third[1]).any()
    assert len(np.unique(first[1])) == 64


def walk(value: object) -> Iterator[object]:
    yield value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from walk(getattr(value, f.name))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from walk(key)
            yield from walk(item)
    elif isinstance(value, tuple | list):
        for item in value:
            yield from walk(item)


def test_server_state_holds_public_keys_only() -> None:
    # Prepare
    params = make_params(run_id=RUN, party_ids=[1, 2, 3], max_count=4)
    server, parties = connect(params)
    secrets = {seed for state in parties.values() for seed in state.pair_seeds.values()}
    public = {state.public_key for state in parties.values()}

    # Execute
    unmask(server, mask_all(parties, random_counts(params, (2, 2), seed=0), round=0))
    held = list(walk(server))

    # Assert
    assert not any(isinstance(item, KeyPair | X25519PrivateKey) for item in held)
    assert not secrets & {item for item in held if isinstance(item, bytes)}
    assert set(server.directory.values()) == public
    assert {f.name for f in dataclasses.fields(ServerState)} == {"params", "directory"}


def test_party_repr_shows_no_secret() -> None:
    # Prepare
    params = make_params(run_id=RUN, party_ids=[1, 2], max_count=4)
    _, parties = connect(params)

    # Execute
    text = repr(parties[1])

    # Assert
    assert parties[1].pair_seeds[2].hex() not in text and "pair_seeds" not in text


def test_a_missing_party_cannot_be_unmasked() -> None:
    # Prepare
    params = make_params(run_id=RUN, party_ids=[1, 2, 3], max_count=4)
    server, parties = connect(params)
    masked = mask_all(parties, random_counts(params, (4, 4), seed=0), round=0)
    del masked[2]

    # Execute / Assert
    with pytest.raises(ProtocolError, match=r"missing \[2\]"):
        unmask(server, masked)


def test_masks_from_another_round_do_not_cancel_and_are_detected() -> None:
    # Prepare
    params = make_params(run_id=RUN, party_ids=[1, 2, 3, 4], max_count=16)
    server, parties = connect(params)
    counts = random_counts(params, (32, 16), seed=0)
    masked = mask_all(parties, counts, round=0)
    _, masked[3] = mask(parties[3], counts[3], round=1)

    # Execute / Assert
    with pytest.raises(ProtocolError, match="did not cancel"):
        unmask(server, masked)


def test_a_party_never_masks_twice_under_one_nonce() -> None:
    # Prepare
    params = make_params(run_id=RUN, party_ids=[1, 2], max_count=4)
    _, parties = connect(params)
    state, _ = mask(parties[1], np.zeros(3, np.int64), round=4, channel=1)

    # Execute / Assert
    for round, channel in [(4, 1), (4, 0), (3, 9)]:
        with pytest.raises(ProtocolError, match="reused nonce"):
            mask(state, np.ones(3, np.int64), round=round, channel=channel)
    later, _ = mask(state, np.ones(3, np.int64), round=4, channel=2)
    assert later.last_nonce == (4, 2)


def test_masking_needs_the_pair_seeds_first() -> None:
    # Prepare
    params = make_params(run_id=RUN, party_ids=[1, 2], max_count=4)
    state = setup_party(params, party_id=1)

    # Execute / Assert
    with pytest.raises(ProtocolError, match="call share_keys first"):
        mask(state, np.zeros(3, np.int64), round=0)


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        (np.array([0, 17]), r"counts must lie in 0\.\.16, got values in 0\.\.17"),
        (np.array([-1, 3]), r"got values in -1\.\.3"),
        (np.array([0.5]), "must be integers, got dtype float64"),
    ],
)
def test_counts_outside_0_to_b_are_refused(counts: np.ndarray, message: str) -> None:
    # Prepare
    params = make_params(run_id=RUN, party_ids=[1, 2], max_count=16)
    _, parties = connect(params)

    # Execute / Assert
    with pytest.raises(ConfigError, match=message):
        mask(parties[1], counts, round=0)


def test_bits_too_small_for_the_sum_are_refused_with_the_bound() -> None:
    with pytest.raises(ConfigError, match=r"bits=6 .* 4 counts in 0\.\.16: need .* = 7"):
        make_params(run_id=RUN, party_ids=[1, 2, 3, 4], max_count=16, bits=6)


@pytest.mark.parametrize(
    ("party_ids", "message"),
    [((2, 1), "distinct and increasing"), ((1, 1), "distinct"), ((0, 1), "got 0"), ((1,), "2")],
)
def test_invalid_party_sets_are_refused(party_ids: tuple[int, ...], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SecAggParams(run_id=RUN, party_ids=party_ids, max_count=4, bits=8)


def test_setup_refuses_a_party_outside_the_run() -> None:
    params = make_params(run_id=RUN, party_ids=[1, 2], max_count=4)
    with pytest.raises(ConfigError, match=r"party_id 3 is not one of \[1, 2\]"):
        setup_party(params, party_id=3)


def test_relay_refuses_missing_duplicate_and_invalid_keys() -> None:
    # Prepare
    params = make_params(run_id=RUN, party_ids=[1, 2, 3], max_count=4)
    keys = {i: fixed_key_pair(f"relay/{i}").public_bytes for i in params.party_ids}
    server = ServerState(params)

    # Execute / Assert
    with pytest.raises(ProtocolError, match=r"missing \[3\], unknown \[9\]"):
        relay_public_keys(server, {1: keys[1], 2: keys[2], 9: keys[3]})
    with pytest.raises(ProtocolError, match="same public key"):
        relay_public_keys(server, {**keys, 3: keys[1]})
    with pytest.raises(WireError, match=r"party 2's public key: .* 32 bytes, got 5"):
        relay_public_keys(server, {**keys, 2: b"short"})


def test_party_refuses_a_directory_that_replaces_its_own_key() -> None:
    # Prepare
    params = make_params(run_id=RUN, party_ids=[1, 2], max_count=4)
    state = setup_party(params, party_id=1, key_pair=fixed_key_pair("own"))
    directory = {1: fixed_key_pair("impostor").public_bytes, 2: fixed_key_pair("peer").public_bytes}

    # Execute / Assert
    with pytest.raises(ProtocolError, match="another public key for party 1"):
        share_keys(state, directory)


@pytest.mark.parametrize(
    ("masked", "message"),
    [
        ({}, "at least one masked block"),
        ({1: np.zeros(2, np.uint64), 2: np.zeros(3, np.uint64)}, "share one shape"),
        ({1: np.array([128], np.uint64)}, r"party 1's masked block must lie in 0\.\.127"),
    ],
)
def test_aggregate_refuses_malformed_input(masked: dict[int, np.ndarray], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        aggregate(masked, bits=7)
