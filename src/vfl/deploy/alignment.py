"""The server's side of alignment: run the PSI of ``vfl.deploy.psi`` over the control channel.

Holders are the server (index 0, its labels file) and the parties in ascending id order. Each
list visits every other holder once, in ``M`` relay steps: at step ``t`` the list owned by
holder ``i`` is blinded by holder ``(i + t) mod (M + 1)``, so every party works on exactly one
list per step, in parallel. The server relays every list and blinds those that reach it.
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
from vfl.deploy.psi import POINT_BYTES, PsiHolder, intersect
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
        ids: The server's IDs per split (``SPLIT_TRAIN``, ``SPLIT_TEST``).
        rng: Draws the server's secret list order.

    Raises:
        DataError: if a split's intersection is empty.
        ProtocolError, WireError: if a party fails or answers wrongly.
    """
    alignment_id = secrets.token_hex(8)
    rows = {}
    for split, name in SPLITS.items():
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
    lists = {0: server.start(), **{p: reply.points for p, reply in starts.items()}}
    for step in range(1, len(owners)):
        relay: dict[int, int] = {}  # holder -> owner of the list it blinds
        for i, owner in enumerate(owners):
            holder = owners[(i + step) % len(owners)]
            if holder == 0:
                lists[owner] = server.blind(lists[owner])
            else:
                relay[holder] = owner
        requests = {
            h: PsiBlindRequest(round=0, split=split, points=lists[o]) for h, o in relay.items()
        }
        for holder, reply in ask(channel, requests, PsiPointsReply).items():
            if len(reply.points) != len(lists[relay[holder]]):
                raise WireError(
                    f"party {holder} returned {len(reply.points) // POINT_BYTES} elements for a"
                    f" list of {len(lists[relay[holder]]) // POINT_BYTES}"
                )
            lists[relay[holder]] = reply.points
    orders = intersect([lists[owner] for owner in owners])
    results = {
        p: PsiResultRequest(
            round=0, split=split, order=torch.from_numpy(order), alignment=alignment_id
        )
        for p, order in zip(parties, orders[1:], strict=True)
    }
    ask(channel, results, ControlAck)
    return server.rows(orders[0])
