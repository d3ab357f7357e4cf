"""``vfl party --predict`` and ``--serve`` with a SecureBoost bundle: a holder answering lookups.

The party loads its bundle (``STATE_DIR/bundle/party-<id>/``, ``vfl.run.tree_bundles``: its own
split rules and the encoding of its raw columns; no pickle) and presents the bundle's run
fingerprint when it connects, as a neural party does. It keeps the rows to score as one table
and answers the label holder's ``RouteRequest``s (which of these rows go left at these of my
records), one per depth of the trees for a whole batch, through the same ``PassiveAnswers`` as
in training.

- **Batch** (``--predict``): it encodes its whole new table when it starts, aligns its IDs with
  the server's by PSI, and keeps the aligned rows.
- **Online** (``--serve``): for each ``LookupRequest`` it looks the IDs up in its current table
  (``vfl.deploy.rows``), keeps their encoded rows, and says which IDs it cannot score and why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vfl.boost.link import PassiveAnswers
from vfl.boost.owner import SplitOwner
from vfl.data.encoding import TableEncoder
from vfl.deploy.alignment import Alignment
from vfl.deploy.boost_party import BOOST_REQUESTS
from vfl.deploy.dispatch import answer
from vfl.deploy.messages import LookupReply, LookupRequest, ModelSetupRequest, SetupReply
from vfl.deploy.psi_party import PsiResponder
from vfl.deploy.rows import Looked, TableRows
from vfl.errors import ConfigError, DataError, ProtocolError, WireError
from vfl.run import tree_bundles
from vfl.run.bundle_files import PREPROCESSING
from vfl.run.tree_bundles import HolderBundle
from vfl.wire import SPLIT_TEST, Message

log = logging.getLogger(__name__)

ROWS_TABLE = "rows"
"""The name under which a predicting holder keeps the rows to score."""


def is_boost_bundle(folder: Path) -> bool:
    """Whether ``folder`` holds a SecureBoost holder's bundle."""
    return tree_bundles.is_tree_folder(folder)


def load_holder(folder: Path, party_id: int) -> HolderBundle:
    """The party's SecureBoost bundle in ``folder``.

    Raises:
        DataError: naming a bundle file that is missing or corrupt.
        ConfigError: if the bundle is another party's.
    """
    bundle = tree_bundles.load_holder(folder)
    if bundle.party != party_id:
        raise ConfigError(
            f"{folder} holds party {bundle.party}'s SecureBoost bundle; this is party {party_id}"
        )
    return bundle


def holder_encoder(bundle: HolderBundle, folder: Path) -> TableEncoder:
    """The encoding of the party's raw columns that training fitted.

    Raises:
        DataError: if the bundle has none.
    """
    encoder = bundle.encoder
    if encoder is None:
        raise DataError(f"{folder / PREPROCESSING} holds no encoder of the party's table columns")
    return encoder


class BoostModelRuntime:
    """Answers a predicting server with the party's SecureBoost bundle and rows.

    Args:
        bundle: The party's bundle.
        rows: Its table of rows to score.
        batch: Predict for the whole table, aligned by PSI (else look rows up per request).
    """

    def __init__(self, bundle: HolderBundle, rows: TableRows, *, batch: bool) -> None:
        self.bundle = bundle
        self.party_id = bundle.party
        self.rows = rows
        self.holder = SplitOwner(bundle.party, bundle.splits, bundle.width)
        self.answers = PassiveAnswers(self.holder)
        self._alignment: Alignment | None = None
        self._ready = False
        self._handlers: dict[type[Message], Callable[[Any], Message]] = {
            ModelSetupRequest: self._setup,
            **dict.fromkeys(BOOST_REQUESTS, self._answer),
        }
        self._block = np.zeros((0, bundle.width))
        if batch:
            ids, self._block = self._whole_table()
            psi = PsiResponder(self.party_id, {SPLIT_TEST: ids}, self._aligned)
            self._handlers.update(psi.handlers())
        else:
            self._handlers[LookupRequest] = self._lookup

    def handle(self, message: Message) -> Message:
        """Answer one request."""
        return answer(message, self._handlers, None, self.party_id)

    def _whole_table(self) -> tuple[np.ndarray, np.ndarray]:
        ids, _ = self.rows.all_rows()
        looked = self.rows.lookup([str(value) for value in ids])
        if looked.failed:
            position, reason = next(iter(looked.failed.items()))
            raise DataError(
                f"{reason} (ID {str(ids[position])!r}; {len(looked.failed)} of {len(ids)} rows"
                " cannot be scored): fix the table"
            )
        return ids, self._features(looked)

    def _features(self, looked: Looked) -> np.ndarray:
        return looked.block.numpy().astype(np.float64).reshape(len(looked.block), -1)

    def _aligned(self, alignment: Alignment) -> None:
        self._alignment = alignment

    def _setup(self, request: ModelSetupRequest) -> SetupReply:
        if request.fingerprint != self.bundle.fingerprint:
            raise ProtocolError(
                f"party {self.party_id}'s SecureBoost bundle comes from another run than the"
                " server's model"
            )
        rows = 0
        if request.alignment:
            if self._alignment is None or self._alignment.id != request.alignment:
                raise ProtocolError(f"party {self.party_id}: no alignment {request.alignment!r}")
            block = self._block[self._alignment.rows[SPLIT_TEST]]
            self.holder.attach(ROWS_TABLE, block)
            rows = len(block)
        self._ready = True
        log.info("set up from its SecureBoost bundle: %d rows to predict", rows)
        return SetupReply(
            round=request.round, width=self.bundle.width, num_train=rows, num_test=rows
        )

    def _answer(self, message: Message) -> Message:
        if not self._ready:
            raise ProtocolError(
                f"party {self.party_id} got a {type(message).__name__} before its set-up"
            )
        return self.answers.handle(message)

    def _lookup(self, request: LookupRequest) -> LookupReply:
        if not self._ready:
            raise ProtocolError(f"party {self.party_id}: lookup before setup")
        try:
            ids = [raw.decode() for raw in request.ids]
        except UnicodeDecodeError:
            raise WireError(f"party {self.party_id}: an ID of the lookup is not UTF-8") from None
        looked = self.rows.lookup(ids)
        self.holder.attach(ROWS_TABLE, self._features(looked))
        failed, noted = sorted(looked.failed), sorted(looked.notes)
        return LookupReply(
            round=request.round,
            failed=torch.tensor(failed, dtype=torch.int64),
            reasons=tuple(looked.failed[i].encode() for i in failed),
            noted=torch.tensor(noted, dtype=torch.int64),
            notes=tuple(looked.notes[i].encode() for i in noted),
        )
