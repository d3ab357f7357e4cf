"""A party's side of alignment: answer the server's PSI requests with its own IDs.

Training aligns the train and the test split; a batch prediction aligns its new rows alone (as
the test split). Once every split the party holds is aligned, the outcome is handed on (saved in
the state directory by a training party, kept in memory by a predicting one).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from vfl.deploy.alignment import Alignment
from vfl.deploy.data import SPLITS, id_bytes
from vfl.deploy.messages import (
    ControlAck,
    PsiBlindRequest,
    PsiPointsReply,
    PsiResultRequest,
    PsiStartRequest,
)
from vfl.deploy.psi import PsiHolder
from vfl.errors import WireError
from vfl.wire import Message

log = logging.getLogger(__name__)


class PsiResponder:
    """Blinds a party's IDs for the server's PSI and records which rows every holder shares.

    Args:
        party_id: This party's id.
        ids: The party's IDs of each split it aligns.
        on_aligned: Called with the alignment once every split of ``ids`` is aligned.
        rng: Draws the secret order of its PSI lists (fresh entropy by default).
    """

    def __init__(
        self,
        party_id: int,
        ids: Mapping[int, npt.NDArray[np.generic]],
        on_aligned: Callable[[Alignment], None],
        *,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.party_id = party_id
        self.ids = dict(ids)
        self.on_aligned = on_aligned
        self._rng = rng
        self._holders: dict[int, PsiHolder] = {}
        self._aligned: dict[str, dict[int, npt.NDArray[np.int64]]] = {}

    def handlers(self) -> dict[type[Message], Callable[[Any], Message]]:
        """The PSI requests this answers, with their handlers."""
        return {
            PsiStartRequest: self.start,
            PsiBlindRequest: self.blind,
            PsiResultRequest: self.result,
        }

    def start(self, request: PsiStartRequest) -> PsiPointsReply:
        """Blind the party's own IDs of the split, in a secret order."""
        split = self._split(request.split)
        holder = PsiHolder(id_bytes(self.ids[split]), rng=self._rng)
        self._holders[split] = holder
        return PsiPointsReply(round=request.round, points=holder.start())

    def blind(self, request: PsiBlindRequest) -> PsiPointsReply:
        """Blind another holder's list with this party's key."""
        holder = self._holders.get(self._split(request.split))
        if holder is None:
            raise WireError(f"party {self.party_id}: PSI blind request before PSI start")
        return PsiPointsReply(round=request.round, points=holder.blind(request.points))

    def result(self, request: PsiResultRequest) -> ControlAck:
        """Record the party's rows held by every holder, in the run's canonical order."""
        split = self._split(request.split)
        holder = self._holders.pop(split, None)
        if holder is None:
            raise WireError(f"party {self.party_id}: PSI result before PSI start")
        rows = holder.rows(request.order.numpy())
        log.info(
            "%s: %d of this party's %d rows are held by every holder; %d dropped",
            SPLITS[split],
            len(rows),
            holder.size,
            holder.size - len(rows),
        )
        aligned = self._aligned.setdefault(request.alignment, {})
        aligned[split] = rows
        if set(aligned) == set(self.ids):
            self.on_aligned(Alignment(request.alignment, aligned))
        return ControlAck(round=request.round)

    def _split(self, split: int) -> int:
        if split not in self.ids:
            raise WireError(f"unknown split code {split}; valid: {sorted(self.ids)}")
        return split
