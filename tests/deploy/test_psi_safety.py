"""PSI safety: the aligned order is a function of the data, bad lists are refused by party name,
and a party learns only the server's set size and which of its own rows are shared.

Alignment runs through the server (``align``) to in-process party runtimes, every
message encoded and decoded as over the network.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from tests.deploy.test_psi import SPLITS, party_tables
from vfl.deploy.alignment import Alignment, align
from vfl.deploy.control import LocalControl
from vfl.deploy.messages import (
    PsiBlindRequest,
    PsiPointsReply,
    PsiResultRequest,
    PsiStartRequest,
)
from vfl.deploy.party import PartyRuntime
from vfl.deploy.psi import PsiHolder
from vfl.deploy.psi_group import POINT_BYTES, blind, hash_to_group, order_key, split_points
from vfl.deploy.state import PartyState
from vfl.errors import ProtocolError, WireError
from vfl.transport import PartyEndpoint
from vfl.transport.base import Handler
from vfl.wire import SPLIT_TEST, SPLIT_TRAIN, Message


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
    # above the field prime: no canonical u-coordinate (psi_group.first_invalid)
    "malformed": lambda points: b"\xff" * POINT_BYTES + points[POINT_BYTES:],
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
        # replies of each party, per split: its own list, then the server's list it blinded
        # party 1's own training list (40)
        (1, 0, "malformed", "party 1 sent a malformed PSI list: element 0 of 40 is not a point"),
        (2, 0, "malformed", "party 2 sent a malformed PSI list: element 0 of 45 is not a point"),
        # party 2's blinding of the server's list (35)
        (2, 1, "malformed", "party 2 sent a malformed PSI list: element 0 of 35 is not a point"),
        # party 1's own test list (40): the second split is checked as the first
        (1, 2, "malformed", "party 1 sent a malformed PSI list: element 0 of 40 is not a point"),
        (2, 0, "repeated", "party 2 sent a malformed PSI list: elements 0 and 1 of 45 are equal"),
        # party 1 blinds the server's list (35)
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


@dataclass
class Observed:
    """What reached party 1 during an alignment, what it answered, and its secret scalars."""

    received: list[Message] = field(default_factory=list)
    replies: list[Message] = field(default_factory=list)
    scalars: dict[frozenset[bytes], bytes] = field(default_factory=dict)

    def lists(self, split: int) -> list[bytes]:
        """The lists of other holders it was asked to blind."""
        return [
            m.points for m in self.received if isinstance(m, PsiBlindRequest) and m.split == split
        ]

    def own_list(self, split: int) -> bytes:
        """The list of its own IDs it sent."""
        return next(
            r.points
            for r, m in zip(self.replies, self.received, strict=True)
            if isinstance(m, PsiStartRequest) and m.split == split and isinstance(r, PsiPointsReply)
        )

    def result(self, split: int) -> list[int]:
        """The positions the server named in its result."""
        message = next(
            m for m in self.received if isinstance(m, PsiResultRequest) and m.split == split
        )
        return [int(p) for p in message.order.tolist()]


def observe_party_1(
    holder_ids: dict[int, dict[str, list[str]]], root: Path, monkeypatch: pytest.MonkeyPatch
) -> Observed:
    """Align the holders' IDs, recording everything party 1 receives and its scalars."""
    observed = Observed()

    class Kept(PsiHolder):
        def __init__(self, ids: list[bytes], *, rng: np.random.Generator | None = None) -> None:
            super().__init__(ids, rng=rng)
            observed.scalars[frozenset(ids)] = self._scalar

    monkeypatch.setattr("vfl.deploy.psi_party.PsiHolder", Kept)
    runtimes = runtimes_for(holder_ids, root)

    def party_1(message: Message) -> Message:
        observed.received.append(message)
        return replies_into(runtimes[1].handle, observed.replies)(message)

    endpoints = {1: PartyEndpoint(1, party_1), 2: PartyEndpoint(2, runtimes[2].handle)}
    align(LocalControl(endpoints), server_ids_of(holder_ids))
    return observed


def test_a_party_learns_only_the_set_sizes_and_which_of_its_own_rows_are_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    holder_ids = two_party_ids()
    everyone = {x.encode() for h in range(3) for s in SPLITS for x in holder_ids[h][s]}

    # Execute
    seen = observe_party_1(holder_ids, tmp_path, monkeypatch)

    # Assert: only PSI requests reach it
    assert {type(m).__name__ for m in seen.received} == {
        "PsiStartRequest",
        "PsiBlindRequest",
        "PsiResultRequest",
    }
    for name, split in (("train", SPLIT_TRAIN), ("test", SPLIT_TEST)):
        mine = {x.encode() for x in holder_ids[1][name]}
        scalar = seen.scalars[frozenset(mine)]
        # Control: its own list links to exactly its own IDs, so the check below can see links
        assert linkable(seen.own_list(split), everyone, scalar) == mine
        # Assert: no element it received links to any ID, its own or another holder's
        assert all(linkable(points, everyone, scalar) == set() for points in seen.lists(split))
        # Assert: the one list it blinds is the server's: its size is the only size it sees
        assert [len(p) // POINT_BYTES for p in seen.lists(split)] == [len(holder_ids[0][name])]
        # Assert: the result is positions in its own list, ascending: its shared rows alone
        positions = seen.result(split)
        assert positions == sorted(positions)
        assert len(positions) == len(
            set.intersection(*(set(holder_ids[h][name]) for h in range(3)))
        )
