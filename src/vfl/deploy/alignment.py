"""The server's side of alignment: run the PSI of ``vfl.deploy.psi`` over the control channel.

Holders are the server (its labels file) and the parties. Two exchanges per split, each with
every party at once, the server doing its own share while the parties do theirs:

1. every party sends its own list ``k_i H(S_i)``; meanwhile the server makes ``k_0 H(S_0)``;
2. every party blinds the server's list into ``k_i k_0 H(S_0)`` (in the server's order);
   meanwhile the server blinds each party's list into ``k_0 k_i H(S_i)`` (in that party's
   order).

The server then matches, per party, its own list against that party's, and keeps the IDs that
every party holds (``vfl.deploy.psi.intersect_with_server``). Every list a party returns is
checked as soon as it arrives: whole 32-byte elements, as many as were sent, none repeated
(blinding distinct IDs never repeats one), each a valid element of the group; the error names
the party that sent it.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

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
from vfl.deploy.psi import PsiHolder, intersect_with_server
from vfl.deploy.psi_group import POINT_BYTES, first_invalid, first_repeat
from vfl.errors import DataError, WireError

log = logging.getLogger(__name__)

T = TypeVar("T")


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
    starts = {p: PsiStartRequest(round=0, split=split) for p in parties}
    with _meanwhile(server.start) as made:
        sent = ask(channel, starts, PsiPointsReply)
    party_lists = {p: _checked(p, reply.points) for p, reply in sent.items()}
    own = made.result()
    requests = {p: PsiBlindRequest(round=0, split=split, points=own) for p in parties}
    with _meanwhile(lambda: {p: server.blind(party_lists[p]) for p in parties}) as blinding:
        replies = ask(channel, requests, PsiPointsReply)
    count = len(own) // POINT_BYTES
    by_party = [_checked(p, replies[p].points, sent=count) for p in parties]
    shared = intersect_with_server(by_party, [blinding.result()[p] for p in parties])
    results = {
        p: PsiResultRequest(
            round=0, split=split, order=torch.from_numpy(positions), alignment=alignment_id
        )
        for p, positions in zip(parties, shared[1:], strict=True)
    }
    ask(channel, results, ControlAck)
    return server.rows(shared[0])


@contextmanager
def _meanwhile(work: Callable[[], T]) -> Iterator[Future[T]]:
    """Run ``work`` in a thread while the block waits for the parties (its result: ``.result()``).

    libsodium releases Python's interpreter lock, so the server's share of the blinding runs
    while the control channel waits for the parties' replies.
    """
    with ThreadPoolExecutor(1, thread_name_prefix="vfl-psi-server") as pool:
        yield pool.submit(work)


def _checked(party: int, points: bytes, *, sent: int | None = None) -> bytes:
    """``points`` from ``party``, once they are valid elements, as many as sent, none repeated.

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
    index = first_invalid(points)
    if index is not None:
        raise WireError(
            f"party {party} sent a malformed PSI list: element {index} of {count} is not a"
            " point of the prime-order group"
        )
    repeat = first_repeat(points)
    if repeat is not None:
        raise WireError(
            f"party {party} sent a malformed PSI list: elements {repeat[0]} and {repeat[1]}"
            f" of {count} are equal, which blinded distinct IDs never are"
        )
    return points
