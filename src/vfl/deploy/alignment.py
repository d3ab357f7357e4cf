"""The server's side of alignment: run the PSI of ``vfl.deploy.psi`` over the control channel.

Holders are the server (index 0, its labels file) and the parties in ascending id order. Each
list visits every other holder once, in ``M`` relay steps: at step ``t`` the list owned by
holder ``i`` is blinded by holder ``(i + t) mod (M + 1)``, so every party works on exactly one
list per step, in parallel. The server relays every list and blinds those that reach it.

Every list a party returns is checked before it is relayed: whole 32-byte elements, as many as
were sent, none repeated (blinding distinct IDs never repeats one). Whether every element is a
point of the group is checked when the list is blinded next (libsodium refuses other bytes);
when that fails, the server checks the list itself, so that the error names the party that
produced it rather than the one that tried to blind it. The lists a party blinds last are
checked in full before the intersection.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch

from vfl.deploy.control import ControlChannel, ask
from vfl.deploy.data import SPLITS, id_bytes
from vfl.deploy.messages import (
    ControlAck,
    PsiBlindRequest,
    PsiPointsReply,
    PsiResultRequest,
    PsiStartRequest,
)
from vfl.deploy.psi import (
    POINT_BYTES,
    PsiHolder,
    first_invalid,
    first_repeat,
    intersect,
)
from vfl.errors import DataError, WireError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Alignment:
    """The outcome of alignment at one holder.

    Attributes:
        id: Shared by all holders of the run; names the saved files.
        rows: Per split, the holder's own row positions in canonical order.
    """

    id: str
    rows: dict[int, npt.NDArray[np.int64]]

    def save(self, path: Path) -> None:
        """Write to ``path`` (``torch.save`` of tensors and strings only)."""
        state = {"id": self.id, "rows": {s: torch.from_numpy(r) for s, r in self.rows.items()}}
        temporary = path.with_name(path.name + ".tmp")
        torch.save(state, temporary)
        temporary.replace(path)

    @classmethod
    def load(cls, path: Path) -> Alignment:
        """Read a file written by ``save``."""
        state = torch.load(path, weights_only=True)
        return cls(str(state["id"]), {int(s): r.numpy() for s, r in state["rows"].items()})


def align(
    channel: ControlChannel,
    ids: Mapping[int, npt.NDArray[np.generic]],
    *,
    rng: np.random.Generator | None = None,
) -> Alignment:
    """Intersect the server's IDs (per split) with every party's, privately.

    Args:
        channel: Reaches the parties.
        ids: The server's IDs of each split to align (``SPLIT_TRAIN``, ``SPLIT_TEST``; a
            prediction aligns its new rows as ``SPLIT_TEST`` alone).
        rng: Draws the server's secret list order.

    Raises:
        DataError: if a split's intersection is empty.
        ProtocolError, WireError: if a party fails or answers wrongly.
    """
    alignment_id = secrets.token_hex(8)
    rows = {}
    for split in ids:
        name = SPLITS[split]
        rows[split] = _align_split(channel, split, ids[split], alignment_id, rng)
        dropped = len(ids[split]) - len(rows[split])
        log.info(
            "%s: %d of %d labelled rows are held by every party; %d dropped",
            name,
            len(rows[split]),
            len(ids[split]),
            dropped,
        )
        if not len(rows[split]):
            raise DataError(f"the {name} IDs of the server and the parties have no common ID")
    return Alignment(alignment_id, rows)


def _align_split(
    channel: ControlChannel,
    split: int,
    ids: npt.NDArray[np.generic],
    alignment_id: str,
    rng: np.random.Generator | None,
) -> npt.NDArray[np.int64]:
    server = PsiHolder(id_bytes(ids), rng=rng)
    parties = channel.party_ids
    starts = ask(
        channel, {p: PsiStartRequest(round=0, split=split) for p in parties}, PsiPointsReply
    )
    owners = [0, *parties]
    lists = {0: server.start(), **{p: _checked(p, reply.points) for p, reply in starts.items()}}
    made_by = {owner: owner for owner in owners}  # the holder that produced each list last
    for step in range(1, len(owners)):
        _relay(channel, split, owners, step, lists, made_by, server)
    for owner, maker in made_by.items():
        if maker != 0:
            _require_points(maker, lists[owner])
    shared = intersect([lists[owner] for owner in owners])
    results = {
        p: PsiResultRequest(
            round=0, split=split, order=torch.from_numpy(positions), alignment=alignment_id
        )
        for p, positions in zip(parties, shared[1:], strict=True)
    }
    ask(channel, results, ControlAck)
    return server.rows(shared[0])


def _relay(
    channel: ControlChannel,
    split: int,
    owners: list[int],
    step: int,
    lists: dict[int, bytes],
    made_by: dict[int, int],
    server: PsiHolder,
) -> None:
    """One relay step: every list is blinded by the holder ``step`` places after its owner."""
    relay: dict[int, int] = {}  # holder -> owner of the list it blinds
    for i, owner in enumerate(owners):
        holder = owners[(i + step) % len(owners)]
        if holder != 0:
            relay[holder] = owner
            continue
        try:
            lists[owner] = server.blind(lists[owner])
        except WireError:
            _require_points(made_by[owner], lists[owner])
            raise
        made_by[owner] = 0
    requests = {h: PsiBlindRequest(round=0, split=split, points=lists[o]) for h, o in relay.items()}
    exchange = channel.control(requests)
    for holder in exchange.failures:
        _require_points(made_by[relay[holder]], lists[relay[holder]])
    for holder, reply in exchange.replies_of(PsiPointsReply).items():
        owner = relay[holder]
        lists[owner] = _checked(holder, reply.points, sent=len(lists[owner]) // POINT_BYTES)
        made_by[owner] = holder


def _checked(party: int, points: bytes, *, sent: int | None = None) -> bytes:
    """``points`` from ``party``, once they are whole elements, as many as sent, none repeated.

    Raises:
        WireError: naming the party and what is wrong with its list.
    """
    if len(points) % POINT_BYTES:
        raise WireError(
            f"party {party} sent a malformed PSI list: {len(points)} bytes are not a whole"
            f" number of {POINT_BYTES}-byte elements"
        )
    count = len(points) // POINT_BYTES
    if sent is not None and count != sent:
        raise WireError(
            f"party {party} returned {count} PSI elements for a list of {sent}; blinding keeps"
            " every element"
        )
    repeat = first_repeat(points)
    if repeat is not None:
        raise WireError(
            f"party {party} sent a malformed PSI list: elements {repeat[0]} and {repeat[1]}"
            f" of {count} are equal, which blinded distinct IDs never are"
        )
    return points


def _require_points(party: int, points: bytes) -> None:
    """Raise ``WireError`` naming ``party`` unless every element is a point of the group."""
    index = first_invalid(points)
    if index is not None:
        raise WireError(
            f"party {party} sent a malformed PSI list: element {index} of"
            f" {len(points) // POINT_BYTES} is not a point of the prime-order group"
        )
