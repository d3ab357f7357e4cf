"""A deployed party's SecureBoost role: a passive holder of its own aligned columns.

After the PSI, the server's ``BoostSetupRequest`` names the alignment and the bins; the party
encodes its aligned training and test columns exactly as for a neural run (statistics of its
training rows, ``vfl.deploy.data.fit_features``), bins its training columns, keeps its test rows
as table ``test`` for the server's per-tree evaluation, and from then on answers SecureBoost's
messages (``vfl.boost``) through ``PassiveAnswers``: its columns, cut points and thresholds never
leave the process. Requests over the frame limit arrive in pieces and are put together there.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vfl.boost.link import PassiveAnswers
from vfl.boost.passive import PassiveBooster
from vfl.boost.pieces import BoostPart
from vfl.boost.state import splits_from_plain, splits_to_plain
from vfl.boost.wire_messages import (
    BoostGradients,
    BoostHistogramRequest,
    BoostKeyAnnounce,
    BoostRouteRequest,
    BoostSplitRequest,
)
from vfl.config import RunConfig
from vfl.config.io import from_mapping
from vfl.data.encoding import TableEncoder
from vfl.deploy.alignment import Alignment
from vfl.deploy.data import HolderSplit, fit_features
from vfl.deploy.messages import BoostSetupRequest, SetupReply
from vfl.errors import ConfigError, ProtocolError
from vfl.run.tree_bundles import write_holder
from vfl.wire import SPLIT_TEST, SPLIT_TRAIN, Message

log = logging.getLogger(__name__)

TEST_TABLE = "test"
"""The name under which a holder keeps its aligned test rows (the server evaluates each tree)."""

SPLITS_KEY = "boost_splits"
"""The checkpoint entry of a holder's split rules (plain lists: no tensors, no pickle of code)."""

BOOST_REQUESTS: tuple[type[Message], ...] = (
    BoostKeyAnnounce,
    BoostGradients,
    BoostHistogramRequest,
    BoostSplitRequest,
    BoostRouteRequest,
    BoostPart,
)
"""The SecureBoost messages a passive holder answers."""


class BoostRole:
    """A party's passive holder, built from its aligned tables.

    Args:
        party_id: This party's id.
        tables: Its train and test tables.
        alignment: The run's alignment (this party's row positions per split).
        request: The server's set-up.
        categorical: Columns to one-hot encode (empty: inferred).
    """

    def __init__(
        self,
        party_id: int,
        tables: Mapping[int, HolderSplit],
        alignment: Alignment,
        request: BoostSetupRequest,
        *,
        categorical: Sequence[str] = (),
    ) -> None:
        self.config = run_config(party_id, request.config)
        train = tables[SPLIT_TRAIN].take(alignment.rows[SPLIT_TRAIN])
        test = tables[SPLIT_TEST].take(alignment.rows[SPLIT_TEST])
        train_block, test_block, self.encoder = fit_features(train, test, categorical=categorical)
        self.holder = PassiveBooster(
            party_id, train_block.numpy().astype(np.float64), max_bin=request.max_bin
        )
        self.holder.attach(TEST_TABLE, test_block.numpy().astype(np.float64))
        self.answers = PassiveAnswers(self.holder)
        self.reply = SetupReply(
            round=request.round,
            width=int(train_block.shape[1]),
            num_train=len(train_block),
            num_test=len(test_block),
        )
        log.info(
            "SecureBoost holder set up: %d train and %d test rows, %d columns, bins %s",
            len(train_block),
            len(test_block),
            train_block.shape[1],
            list(self.holder.bins),
        )


def run_config(party_id: int, text: str) -> RunConfig:
    """The run config the server sent (TOML), kept in the party's bundle.

    Raises:
        ProtocolError: if it is not a valid run config.
    """
    try:
        return from_mapping(RunConfig, tomllib.loads(text))
    except (tomllib.TOMLDecodeError, ConfigError) as error:
        raise ProtocolError(
            f"party {party_id}: the server sent a bad run config ({error})"
        ) from None


class BoostAnswering:
    """The party runtime's SecureBoost handlers: set-up, then the holder's answers.

    Args:
        party_id: This party's id.
        tables: Its train and test tables.
        load_alignment: The saved alignment of an id (``PartyState.load_alignment``).
        load_checkpoint: The state saved after a number of trees (``PartyState.load_checkpoint``),
            for a resumed run.
        categorical: Columns to one-hot encode (empty: inferred).
    """

    def __init__(
        self,
        party_id: int,
        tables: Mapping[int, HolderSplit],
        load_alignment: Callable[[str], Alignment],
        *,
        load_checkpoint: Callable[[int], dict[str, Any]] | None = None,
        categorical: Sequence[str] = (),
    ) -> None:
        self.party_id = party_id
        self.tables = tables
        self.load_alignment = load_alignment
        self.load_checkpoint = load_checkpoint
        self.categorical = tuple(categorical)
        self.role: BoostRole | None = None

    @property
    def encoder(self) -> TableEncoder | None:
        """The encoding of this party's columns, once set up."""
        return None if self.role is None else self.role.encoder

    def handlers(self) -> dict[type[Message], Callable[[Any], Message]]:
        """Handlers by request type, for ``vfl.deploy.dispatch.answer``."""
        answers: dict[type[Message], Callable[[Any], Message]] = dict.fromkeys(
            BOOST_REQUESTS, self._answer
        )
        return {BoostSetupRequest: self._setup, **answers}

    def export(self, folder: Path, fingerprint: str) -> None:
        """Write this holder's bundle (its split rules and its encoding) into ``folder``."""
        if self.role is None:
            raise ProtocolError(f"party {self.party_id}: bundle export before the set-up")
        holder = self.role.holder
        write_holder(
            folder,
            self.role.config,
            fingerprint,
            party=self.party_id,
            splits=holder.splits,
            width=len(holder.bins),
            preprocessing={"kind": "table", "encoder": self.role.encoder.as_dict()},
        )

    def checkpoint(self) -> dict[str, Any]:
        """What this holder keeps after a tree to continue from it: its own split rules."""
        if self.role is None:
            raise ProtocolError(f"party {self.party_id}: checkpoint before the SecureBoost set-up")
        return {SPLITS_KEY: splits_to_plain(self.role.holder.splits)}

    def _setup(self, request: BoostSetupRequest) -> SetupReply:
        alignment = self.load_alignment(request.alignment)
        role = BoostRole(
            self.party_id, self.tables, alignment, request, categorical=self.categorical
        )
        if request.restore_trees > 0:
            self._restore(role.holder, request.restore_trees)
        self.role = role
        return role.reply

    def _restore(self, holder: PassiveBooster, trees: int) -> None:
        """Its split rules as saved after ``trees`` trees."""
        if self.load_checkpoint is None:
            raise ProtocolError(f"party {self.party_id} keeps no checkpoints to resume from")
        saved = self.load_checkpoint(trees)
        where = f"party {self.party_id}'s checkpoint after tree {trees}"
        splits = splits_from_plain(saved.get(SPLITS_KEY), where, len(holder.bins))
        holder.restore(splits, trees)
        log.info(
            "SecureBoost holder resumed after tree %d: %d split rules", trees, len(splits.rules)
        )

    def _answer(self, message: Message) -> Message:
        if self.role is None:
            raise ProtocolError(
                f"party {self.party_id} got a {type(message).__name__} before the SecureBoost"
                " set-up"
            )
        return self.role.answers.handle(message)
