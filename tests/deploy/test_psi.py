"""Private set intersection: the math, and alignment through the server's relay."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.deploy.alignment import Alignment, align
from vfl.deploy.control import LocalControl
from vfl.deploy.data import HolderSplit, id_bytes
from vfl.deploy.messages import (
    PsiBlindRequest,
    PsiPointsReply,
    PsiResultRequest,
    PsiStartRequest,
)
from vfl.deploy.party import PartyRuntime
from vfl.deploy.psi import (
    POINT_BYTES,
    PsiHolder,
    blind,
    hash_to_group,
    intersect,
    new_scalar,
    order_key,
    split_points,
)
from vfl.deploy.state import PartyState
from vfl.errors import ProtocolError, WireError
from vfl.transport import PartyEndpoint
from vfl.transport.base import Handler
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
    with pytest.raises(WireError, match="not an element"):
        blind(b"\x01" * 32, new_scalar())
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
    # Prepare: each holder lists its IDs in its own random order
    rng = np.random.default_rng(seed)
    lists = [[str(x).encode() for x in rng.permutation(sorted(s))] for s in sets]
    holders = [PsiHolder(ids, rng=np.random.default_rng(seed + i)) for i, ids in enumerate(lists)]
    blinded = [h.start() for h in holders]
    for owner in range(len(holders)):  # every list visits every other holder
        for other, holder in enumerate(holders):
            if other != owner:
                blinded[owner] = holder.blind(blinded[owner])

    # Execute
    orders = intersect(blinded)

    # Assert
    aligned = [
        [ids[r] for r in h.rows(o)] for ids, h, o in zip(lists, holders, orders, strict=True)
    ]
    common = {str(x).encode() for x in set.intersection(*sets)}
    assert all(a == aligned[0] for a in aligned)
    assert set(aligned[0]) == common and len(aligned[0]) == len(common)


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


def recording(handler: Callable[[bytes], bytes], seen: list[bytes]) -> Callable[[bytes], bytes]:
    def handle(frame: bytes) -> bytes:
        seen.append(frame)
        return handler(frame)

    return handle


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
        monkeypatch.setattr(e, "handle_frame", recording(e.handle_frame, seen[p]))
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
        assert all(decode(f).sender == 0 for f in frames)
        for s in SPLITS:
            others = {x for h in range(4) if h != p for x in holder_ids[h][s]}
            foreign = others - set(holder_ids[p][s])
            assert foreign
            for x in foreign:
                assert x.encode() not in received
                assert hash_to_group(x.encode()) not in received


def test_ids_are_compared_by_their_text() -> None:
    assert id_bytes(np.array([7, 42])) == id_bytes(np.array(["7", "42"]))


def two_party_ids(seed: int = 3) -> dict[int, dict[str, list[str]]]:
    """IDs of a server (35 per split) and parties 1 (40) and 2 (45): partly shared, shuffled."""
    rng = np.random.default_rng(seed)
    return {
        h: {
            s: list(rng.permutation([f"{s}{i:03d}" for i in range(50)])[: 35 + 5 * h])
            for s in SPLITS
        }
        for h in range(3)
    }


def runtimes_for(
    holder_ids: dict[int, dict[str, list[str]]], root: Path
) -> dict[int, PartyRuntime]:
    return {
        p: PartyRuntime(p, party_tables(holder_ids[p], p), PartyState(root / f"p{p}", resume=False))
        for p in holder_ids
        if p != 0
    }


def server_ids_of(holder_ids: dict[int, dict[str, list[str]]]) -> dict[int, np.ndarray]:
    return {
        SPLIT_TRAIN: np.array(holder_ids[0]["train"]),
        SPLIT_TEST: np.array(holder_ids[0]["test"]),
    }


def replies_into(handler: Handler, replies: list[Message]) -> Handler:
    """``handler``, keeping every reply it gives in ``replies``."""

    def handle(message: Message) -> Message:
        reply = handler(message)
        replies.append(reply)
        return reply

    return handle


def test_the_aligned_order_is_the_same_in_every_run_over_the_same_data(tmp_path: Path) -> None:
    # Prepare: the same IDs aligned twice, each time with fresh scalars and list orders
    holder_ids = two_party_ids()
    sent: dict[str, list[Message]] = {"first": [], "second": []}

    def run(name: str) -> tuple[Alignment, dict[int, Alignment]]:
        runtimes = runtimes_for(holder_ids, tmp_path / name)
        endpoints = {p: PartyEndpoint(p, r.handle) for p, r in runtimes.items()}
        endpoints[1] = PartyEndpoint(1, replies_into(runtimes[1].handle, sent[name]))
        alignment = align(LocalControl(endpoints), server_ids_of(holder_ids))
        saved = {
            p: Alignment.load(next(r.state.directory.glob("alignment-*.pt")))
            for p, r in runtimes.items()
        }
        return alignment, saved

    # Execute
    first, first_parties = run("first")
    second, second_parties = run("second")

    # Assert: the same rows in the same order at every holder, from different blinded lists
    assert sent["first"][0] != sent["second"][0]  # control: party 1's own list differs
    assert isinstance(sent["first"][0], PsiPointsReply)
    for split in (SPLIT_TRAIN, SPLIT_TEST):
        assert first.rows[split].tolist() == second.rows[split].tolist()
        for p in (1, 2):
            assert first_parties[p].rows[split].tolist() == second_parties[p].rows[split].tolist()
        order = list(server_ids_of(holder_ids)[split][first.rows[split]])
        assert order == sorted(order, key=lambda x: order_key(x.encode()))
        assert order != sorted(order)


Tamper = Callable[[bytes], bytes]

TAMPERS: dict[str, Tamper] = {
    "malformed": lambda points: b"\x01" * POINT_BYTES + points[POINT_BYTES:],
    "repeated": lambda points: points[:POINT_BYTES] * 2 + points[2 * POINT_BYTES :],
    "short": lambda points: points[:-POINT_BYTES],
}


def tampering(runtime: PartyRuntime, reply_number: int, tamper: Tamper) -> Handler:
    """The runtime's handler, with its ``reply_number``-th PSI list changed by ``tamper``."""
    count = [0]

    def handle(message: Message) -> Message:
        reply = runtime.handle(message)
        if isinstance(reply, PsiPointsReply):
            count[0] += 1
            if count[0] == reply_number + 1:
                return PsiPointsReply(round=reply.round, points=tamper(reply.points))
        return reply

    return handle


@pytest.mark.parametrize(
    ("party", "reply_number", "tamper", "expected"),
    [
        # party 1's own list (40) goes to party 2 first: party 2 cannot blind it, party 1 is named
        (1, 0, "malformed", "party 1 sent a malformed PSI list: element 0 of 40 is not a point"),
        # party 2's own list (45) goes to the server first
        (2, 0, "malformed", "party 2 sent a malformed PSI list: element 0 of 45 is not a point"),
        # party 2 blinds party 1's list (40) in step 1; the server blinds it in step 2
        (2, 1, "malformed", "party 2 sent a malformed PSI list: element 0 of 40 is not a point"),
        # party 1 blinds party 2's list (45) last: checked before the intersection
        (1, 2, "malformed", "party 1 sent a malformed PSI list: element 0 of 45 is not a point"),
        (2, 0, "repeated", "party 2 sent a malformed PSI list: elements 0 and 1 of 45 are equal"),
        # party 1 blinds the server's list (35) in step 1
        (1, 1, "repeated", "party 1 sent a malformed PSI list: elements 0 and 1 of 35 are equal"),
        (1, 1, "short", "party 1: WireError('a blinded PSI list has 34 elements; it was sent 35"),
    ],
)
def test_a_party_sending_a_bad_psi_list_is_refused_by_name(
    tmp_path: Path, party: int, reply_number: int, tamper: str, expected: str
) -> None:
    # Prepare
    holder_ids = two_party_ids()
    runtimes = runtimes_for(holder_ids, tmp_path)
    handlers: dict[int, Handler] = {p: r.handle for p, r in runtimes.items()}
    handlers[party] = tampering(runtimes[party], reply_number, TAMPERS[tamper])
    endpoints = {p: PartyEndpoint(p, h) for p, h in handlers.items()}

    # Execute / Assert
    with pytest.raises((WireError, ProtocolError)) as caught:
        align(LocalControl(endpoints), server_ids_of(holder_ids))
    assert expected in str(caught.value)


def test_an_honest_alignment_of_the_same_run_succeeds(tmp_path: Path) -> None:
    # Prepare: the control of the test above: nothing tampered, same IDs
    holder_ids = two_party_ids()
    runtimes = runtimes_for(holder_ids, tmp_path)
    endpoints = {p: PartyEndpoint(p, r.handle) for p, r in runtimes.items()}

    # Execute
    alignment = align(LocalControl(endpoints), server_ids_of(holder_ids))

    # Assert: the list sizes the cases above name
    assert [len(holder_ids[h]["train"]) for h in range(3)] == [35, 40, 45]
    assert len(alignment.rows[SPLIT_TRAIN]) == len(
        set.intersection(*(set(holder_ids[h]["train"]) for h in range(3)))
    )


def linkable(points: bytes, candidates: set[bytes], scalar: bytes) -> set[bytes]:
    """Candidate IDs ``x`` whose ``H(x)`` or ``k H(x)`` (what a holder of ``k`` can compute)
    occur in ``points``."""
    elements = set(split_points(points))
    return {
        x
        for x in candidates
        if hash_to_group(x) in elements or blind(hash_to_group(x), scalar) in elements
    }


def test_a_party_learns_only_the_set_sizes_and_which_of_its_own_rows_are_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: every message reaching party 1, and the secret scalar it holds per split
    holder_ids = two_party_ids()
    holders: dict[frozenset[bytes], PsiHolder] = {}

    class Kept(PsiHolder):
        def __init__(self, ids: list[bytes], *, rng: np.random.Generator | None = None) -> None:
            super().__init__(ids, rng=rng)
            holders[frozenset(ids)] = self

    monkeypatch.setattr("vfl.deploy.party.PsiHolder", Kept)
    runtimes = runtimes_for(holder_ids, tmp_path)
    received: list[Message] = []
    replies: list[Message] = []

    def party_1(message: Message) -> Message:
        received.append(message)
        return replies_into(runtimes[1].handle, replies)(message)

    endpoints = {1: PartyEndpoint(1, party_1), 2: PartyEndpoint(2, runtimes[2].handle)}

    # Execute
    align(LocalControl(endpoints), server_ids_of(holder_ids))

    # Assert: only PSI requests reach it
    assert {type(m).__name__ for m in received} == {
        "PsiStartRequest",
        "PsiBlindRequest",
        "PsiResultRequest",
    }
    everyone = {x.encode() for h in range(3) for s in SPLITS for x in holder_ids[h][s]}
    for name, split in (("train", SPLIT_TRAIN), ("test", SPLIT_TEST)):
        mine = {x.encode() for x in holder_ids[1][name]}
        scalar = holders[frozenset(mine)]._scalar
        lists = [m.points for m in received if isinstance(m, PsiBlindRequest) and m.split == split]
        own = next(
            r.points
            for r, m in zip(replies, received, strict=True)
            if isinstance(m, PsiStartRequest) and m.split == split and isinstance(r, PsiPointsReply)
        )

        # Control: party 1's own list is linkable to exactly its own IDs
        assert linkable(own, everyone, scalar) == mine
        # Assert: no element it received can be linked to any ID, its own or another's
        assert all(linkable(points, everyone, scalar) == set() for points in lists)
        # Assert: the lists' lengths are the other holders' set sizes, the only sizes it sees
        assert sorted(len(p) // POINT_BYTES for p in lists) == sorted(
            len(holder_ids[h][name]) for h in (0, 2)
        )
        # Assert: the result names positions of its own list, ascending: the shared rows alone
        result = next(m for m in received if isinstance(m, PsiResultRequest) and m.split == split)
        positions = result.order.tolist()
        assert positions == sorted(positions)
        common = set.intersection(*(set(holder_ids[h][name]) for h in range(3)))
        assert len(positions) == len(common)
