"""A deployed party's own privacy book-keeping: its release journal, guard, refusals and log.

The party keeps one release journal (``vfl.deploy.releases``) for the samples of its training
table. Each setup of a VFL-PBM run reopens it and gives the role a ``ReleaseGuard`` with every
earlier count; a run without PBM is recorded before it starts (its rows leave exact), or
refused when the party has a budget. After every epoch the party logs what it has spent.
"""

from __future__ import annotations

import logging
from functools import cached_property
from pathlib import Path

import numpy as np
import numpy.typing as npt

from vfl.config import RunConfig
from vfl.config.mechanisms import MECHANISMS
from vfl.deploy.alignment import Alignment
from vfl.deploy.data import id_bytes
from vfl.deploy.party_config import PartyPrivacyConfig
from vfl.deploy.releases import FILE_NAME, Keys, ReleaseFile, id_keys, open_journal, read_journal
from vfl.errors import ProtocolError
from vfl.privacy.events import PbmEvent
from vfl.privacy.releases import ReleaseGuard, Rows
from vfl.privacy.secure_sum import PartySecureSum
from vfl.roles.party import Party
from vfl.wire import SPLIT_TRAIN

log = logging.getLogger(__name__)


class PartyReleases:
    """One party's release journal across the setups of its process.

    Args:
        party_id: The party.
        settings: Its ``[privacy]`` settings from PARTY.toml.
        folder: Where the journal lives unless ``settings.journal_dir`` says otherwise.
        table_ids: The sample IDs of its training table.
    """

    def __init__(
        self,
        party_id: int,
        settings: PartyPrivacyConfig,
        folder: Path,
        table_ids: npt.NDArray[np.generic],
    ) -> None:
        self.party_id = party_id
        self.settings = settings
        self.path = Path(settings.journal_dir or folder) / FILE_NAME
        self._ids = table_ids
        self._journal: ReleaseFile | None = None

    def verify(self) -> None:
        """Read the journal through before the party dials: refuse a damaged one at once.

        Creates a missing journal; drops an incomplete last record and upgrades an old format,
        each after keeping a copy (``vfl.deploy.releases.read_journal``).

        Raises:
            ConfigError: naming the file and the offset of a damaged record.
        """
        read_journal(self.path)

    def check_run(self, config: RunConfig) -> None:
        """Refuse a run without PBM when the party has a budget.

        Raises:
            ProtocolError: naming the budget and the run's mechanism.
        """
        if not MECHANISMS[config.privacy.mechanism].noises and self.settings.max_epsilon:
            noising = " or ".join(repr(name) for name, e in MECHANISMS.items() if e.noises)
            raise ProtocolError(
                f"party {self.party_id} refuses the run: its privacy.max_epsilon ="
                f" {self.settings.max_epsilon:g} needs privacy.mechanism = {noising}, and this run"
                f" has {config.privacy.mechanism!r} (its embeddings would leave without noise)"
            )

    def attach(self, party: Party, alignment: Alignment) -> None:
        """Give a PBM role its guard, or record that a run without PBM trains on these rows."""
        journal, uses, exact, events = self._open()
        rows = alignment.rows[SPLIT_TRAIN]
        if not isinstance(party.options.privacy, PartySecureSum):
            journal.append_exact(rows)
            log.info(
                "privacy: this run trains without PBM; its %d training rows leave exact"
                " (epsilon infinite), as the release journal %s records",
                len(rows),
                self.path,
            )
            return
        guard = ReleaseGuard(
            uses,
            journal,
            delta=self.settings.delta,
            max_epsilon=self.settings.max_epsilon,
            parties=self.settings.parties,
            events=events,
            row_map=rows,
            exact=exact,
        )
        party.options.privacy.guard = guard
        log.info("privacy: this table's samples were released at most %d times", guard.most_uses)

    @cached_property
    def keys(self) -> Keys:
        """The journal's key of each training table row (hashed once, at the first setup)."""
        return id_keys(id_bytes(self._ids))

    def _open(self) -> tuple[ReleaseFile, Rows, Rows, set[PbmEvent]]:
        opened = open_journal(self.path, self.keys)
        if self._journal is not None:  # a setup again (a restore, a new run)
            self._journal.close()
        self._journal = opened[0]
        return opened


def log_spent(party: Party | None) -> None:
    """Log the party's own count and epsilon, if it runs PBM with a guard that released."""
    privacy = party.options.privacy if party is not None else None
    if isinstance(privacy, PartySecureSum) and privacy.guard and privacy.guard.events:
        guard = privacy.guard
        log.info(
            "privacy (own count): samples released at most %d times, epsilon %.4g at delta %g",
            guard.most_uses,
            guard.epsilon(),
            guard.delta,
        )
