"""Private set intersection: the math, and alignment through the server's relay."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nacl import bindings

from vfl.deploy.alignment import Alignment, align
from vfl.deploy.control import LocalControl
from vfl.deploy.data import HolderSplit, id_bytes
from vfl.deploy.party import PartyRuntime
from vfl.deploy.psi import PsiHolder, intersect_with_server
from vfl.deploy.psi_group import (
    FIELD_PRIME,
    _edwards_sum,
    blind,
    first_invalid,
    hash_to_group,
    new_scalar,
    split_points,
)
from vfl.deploy.state import PartyState
from vfl.errors import WireError
from vfl.transport import PartyEndpoint
from vfl.wire import SPLIT_TEST, SPLIT_TRAIN, Message, decode

SPLITS = ("train", "test")


def test_blinding_commutes_so_equal_ids_meet() -> None:
    # Prepare
    point = hash_to_group(b"customer-17")
    a, b = new_scalar(), new_scalar()

    # Execute
    ab = blind(blind(point, a), b)
    ba = blind(blind(point, b), a)

    # Assert
    assert ab == ba
    assert ab != blind(blind(hash_to_group(b"customer-18"), a), b)
    assert blind(point, a) != point


def test_bytes_that_are_not_group_elements_are_rejected() -> None:
    # Prepare: above the field prime, and a point of order 4 (u = 1), then a valid element
    non_canonical, small_order = b"\xff" * 32, b"\x01" + b"\x00" * 31
    valid = hash_to_group(b"customer-17")

    # Execute / Assert
    for bad in (non_canonical, small_order):
        with pytest.raises(WireError, match="not an element"):
            blind(valid + bad, new_scalar())
    assert first_invalid(valid + small_order) == 1
    assert first_invalid(valid + valid) is None  # control: valid elements pass
    with pytest.raises(WireError, match="whole number of 32-byte"):
        split_points(b"\x00" * 33)


@settings(max_examples=15, deadline=None)
@given(
    sets=st.lists(st.sets(st.integers(0, 40), min_size=1, max_size=25), min_size=2, max_size=4),
    seed=st.integers(0, 1000),
)
def test_every_holder_keeps_exactly_the_common_ids_in_one_order(
    sets: list[set[int]], seed: int
) -> None:
    # Prepare: each holder lists its IDs in its own random order; holder 0 is the server
    rng = np.random.default_rng(seed)
    lists = [[str(x).encode() for x in rng.permutation(sorted(s))] for s in sets]
    holders = [PsiHolder(ids, rng=np.random.default_rng(seed + i)) for i, ids in enumerate(lists)]
    server, parties = holders[0], holders[1:]
    own = server.start()
    by_party = [party.blind(own) for party in parties]  # k_i k_0 H(S_0), the server's order
    by_server = [server.blind(party.start()) for party in parties]  # k_0 k_i H(S_i)

    # Execute
    orders = intersect_with_server(by_party, by_server)

    # Assert
    aligned = [
        [ids[r] for r in h.rows(o)] for ids, h, o in zip(lists, holders, orders, strict=True)
    ]
    common = {str(x).encode() for x in set.intersection(*sets)}
    assert all(a == aligned[0] for a in aligned)
    assert set(aligned[0]) == common and len(aligned[0]) == len(common)


def test_two_parties_lists_cannot_be_compared_by_the_server() -> None:
    # Prepare: the same IDs at two parties, each list blinded by the server
    ids = [str(x).encode() for x in range(20)]
    server, first, second = PsiHolder(ids), PsiHolder(ids), PsiHolder(ids)

    # Execute
    first_list = set(split_points(server.blind(first.start())))
    second_list = set(split_points(server.blind(second.start())))

    # Assert: k_0 k_1 H(x) and k_0 k_2 H(x) never meet, so no party-party intersection shows
    assert not first_list & second_list
    # Control: the server's own list, blinded by party 1, meets party 1's list (same keys)
    assert set(split_points(first.blind(server.start()))) == first_list


def on_curve(point: bytes) -> bool:
    """Whether a u-coordinate is on Curve25519 (not its twist): u^3 + A u^2 + u is a square."""
    u = int.from_bytes(point, "little")
    value = (u**3 + 486662 * u**2 + u) % FIELD_PRIME
    return pow(value, (FIELD_PRIME - 1) // 2, FIELD_PRIME) in (0, 1)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_an_element_of_the_twist_stays_on_it_and_never_meets_an_honest_element(
    seed: int,
) -> None:
    # Prepare: a canonical u-coordinate on the twist (not detected by the cheap checks)
    rng = np.random.default_rng(seed)
    twist = next(
        point
        for point in (rng.integers(0, 256, 32, dtype=np.uint8).tobytes() for _ in range(200))
        if first_invalid(point) is None and not on_curve(point)
    )
    honest = hash_to_group(str(seed).encode())
    a, b = new_scalar(), new_scalar()

    # Execute
    blinded_twist = blind(blind(twist, a), b)
    blinded_honest = blind(blind(honest, b), a)

    # Assert: blinding keeps each on its own curve, so they can never be equal
    assert on_curve(honest) and on_curve(blinded_honest)  # control: the check can tell
    assert not on_curve(blinded_twist)
    assert blinded_twist != blinded_honest


def test_a_result_naming_positions_outside_the_list_is_rejected() -> None:
    holder = PsiHolder([b"a", b"b"])
    with pytest.raises(WireError, match="outside"):
        holder.rows(np.array([2], dtype=np.int64))
    with pytest.raises(WireError, match="repeats"):
        holder.rows(np.array([1, 1], dtype=np.int64))


def party_tables(ids: dict[str, list[str]], seed: int) -> dict[int, HolderSplit]:
    rng = np.random.default_rng(seed)
    return {
        split: HolderSplit(
            np.array(ids[name]), pd.DataFrame({"x": rng.normal(size=len(ids[name]))})
        )
        for split, name in ((SPLIT_TRAIN, "train"), (SPLIT_TEST, "test"))
    }


def recording(read: Callable[[bytes], Message], seen: list[bytes]) -> Callable[[bytes], Message]:
    """``read`` (a party's decoding of each request frame), keeping every frame in ``seen``."""

    def tapped(frame: bytes) -> Message:
        seen.append(frame)
        return read(frame)

    return tapped


def test_alignment_through_the_relay_uses_the_intersection_and_hides_other_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: a server and three parties whose ID lists overlap partly, in different orders
    rng = np.random.default_rng(1)
    holder_ids = {
        h: {
            s: list(rng.permutation([f"{s}{i:03d}" for i in range(60)])[: 40 + 5 * h])
            for s in SPLITS
        }
        for h in range(4)
    }
    runtimes = {
        p: PartyRuntime(
            p, party_tables(holder_ids[p], p), PartyState(tmp_path / f"p{p}", resume=False)
        )
        for p in (1, 2, 3)
    }
    seen: dict[int, list[bytes]] = {p: [] for p in runtimes}
    endpoints = {p: PartyEndpoint(p, r.handle) for p, r in runtimes.items()}
    for p, e in endpoints.items():
        monkeypatch.setattr(e, "decode_request", recording(e.decode_request, seen[p]))
    server_ids = {
        SPLIT_TRAIN: np.array(holder_ids[0]["train"]),
        SPLIT_TEST: np.array(holder_ids[0]["test"]),
    }

    # Execute
    alignment = align(LocalControl(endpoints), server_ids)

    # Assert: the same common IDs, in the same order, at every holder
    for split, name in ((SPLIT_TRAIN, "train"), (SPLIT_TEST, "test")):
        common = set.intersection(*(set(holder_ids[h][name]) for h in range(4)))
        order = list(server_ids[split][alignment.rows[split]])
        assert set(order) == common and len(order) == len(common)
        for p, runtime in runtimes.items():
            saved = Alignment.load(next(runtime.state.directory.glob("alignment-*.pt")))
            assert saved.id == alignment.id
            assert list(np.array(holder_ids[p][name])[saved.rows[split]]) == order
    # Assert: no party ever received another holder's ID, hashed or not, beyond its own
    for p, frames in seen.items():
        received = b"".join(frames)
        assert frames and all(decode(f).sender == 0 for f in frames)  # not vacuous
        for s in SPLITS:
            others = {x for h in range(4) if h != p for x in holder_ids[h][s]}
            foreign = others - set(holder_ids[p][s])
            assert foreign
            for x in foreign:
                assert x.encode() not in received
                assert hash_to_group(x.encode()) not in received


def test_ids_are_compared_by_their_text() -> None:
    assert id_bytes(np.array([7, 42])) == id_bytes(np.array(["7", "42"]))


@settings(max_examples=10, deadline=None)
@given(value=st.binary(min_size=1, max_size=40))
def test_the_hash_is_the_edwards_sum_written_as_its_curve25519_u_coordinate(value: bytes) -> None:
    # Prepare: the Edwards point the hash adds up, and a key
    edwards = _edwards_sum(value)
    key = new_scalar()

    def u_of(point: bytes) -> bytes:
        y = int.from_bytes(point, "little") & ((1 << 255) - 1)
        u = (1 + y) * pow(1 - y, -1, FIELD_PRIME) % FIELD_PRIME
        return u.to_bytes(32, "little")

    # Execute: X25519 on the u-coordinate, and edwards25519's own (clamping) multiplication
    montgomery = blind(hash_to_group(value), key)
    twisted = bindings.crypto_scalarmult_ed25519(key, edwards)

    # Assert: the same point, so blinding is the group operation of the Edwards hash
    assert hash_to_group(value) == u_of(edwards)
    assert montgomery == u_of(twisted)
    assert montgomery != hash_to_group(value)  # control: blinding changed the element
