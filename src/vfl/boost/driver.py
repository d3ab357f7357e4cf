"""SecureBoost in one process: every holder built here, talking through vfl's in-process transport.

This is the whole protocol with real Paillier encryption, each role holding only its own data,
and every message encoded to a vfl wire frame, counted in the transport's ledger and decoded
again; only the network is missing (the holders run one after another in this process).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vfl.boost.active import ActiveBooster
from vfl.boost.link import PREDICT_PHASE, SETUP_PHASE, TRAIN_PHASE, TransportLink, local_link
from vfl.boost.paillier import DEFAULT_KEY_BITS, KeyPair
from vfl.boost.params import BoostParams
from vfl.boost.passive import PassiveBooster
from vfl.boost.timing import TreeReport
from vfl.errors import ConfigError

Floats = npt.NDArray[np.float64]


@dataclass
class SecureBoostRun:
    """A trained model, its holders and what training cost."""

    active: ActiveBooster
    passives: dict[int, PassiveBooster]
    link: TransportLink
    reports: list[TreeReport]

    def predict(self, table: str, blocks: Mapping[int, npt.NDArray[np.floating]]) -> Floats:
        """Predictions for new rows, given every holder's columns of them (by party).

        Each passive holder keeps its block as table ``table``; the label holder walks the trees.
        """
        _check_parties(blocks, self.active.party, self.passives)
        for party, passive in self.passives.items():
            passive.attach(table, blocks[party])
        self.link.phase = PREDICT_PHASE
        return self.active.predict(self.link, table, np.asarray(blocks[self.active.party]))


def train_secureboost(
    labels: npt.NDArray[np.floating],
    blocks: Mapping[int, npt.NDArray[np.floating]],
    params: BoostParams,
    *,
    active_party: int = 1,
    key_bits: int = DEFAULT_KEY_BITS,
    insecure_test_key: bool = False,
    workers: int | None = None,
) -> SecureBoostRun:
    """Train SecureBoost on row-aligned column blocks, one per party.

    Args:
        labels: ``(N,)`` labels, held by ``active_party``.
        blocks: Each party's ``(N, F_p)`` columns, by party id; the label holder's block may
            have no columns.
        params: What to grow.
        active_party: The label holder's party id.
        key_bits: Paillier modulus size; below 2048 only with ``insecure_test_key``.
        insecure_test_key: Allow short keys (tests only).
        workers: Encryption processes for the label holder (``None``: every core).
    """
    passive_parties = [p for p in sorted(blocks) if p != active_party]
    _check_parties(blocks, active_party, passive_parties)
    keys = KeyPair.generate(key_bits, insecure_test_key=insecure_test_key)
    passives = {
        p: PassiveBooster(p, blocks[p], max_bin=params.max_bin, insecure_test_key=insecure_test_key)
        for p in passive_parties
    }
    active = ActiveBooster(
        active_party, labels, blocks[active_party], params, keys, workers=workers
    )
    link = local_link(passives)
    link.phase = SETUP_PHASE
    active.connect(link, passive_parties)
    link.phase = TRAIN_PHASE
    reports = []
    try:
        for _ in range(params.num_trees):
            reports.append(grow_counted(active, link))
    finally:
        active.pool.close()
    return SecureBoostRun(active, passives, link, reports)


def grow_counted(active: ActiveBooster, link: TransportLink) -> TreeReport:
    """One tree, with the ledger's bytes of its frames and the time its messages took."""
    transport_before = link.transport_seconds
    report = active.grow_tree(link)
    ledger = link.transport.ledger
    report.bytes_down = ledger.total(phase=TRAIN_PHASE, round=report.tree, direction="down")
    report.bytes_up = ledger.total(phase=TRAIN_PHASE, round=report.tree, direction="up")
    report.transport_seconds = link.transport_seconds - transport_before
    return report


def _check_parties(
    blocks: Mapping[int, object], active_party: int, passives: Mapping[int, object] | list[int]
) -> None:
    expected = sorted([active_party, *passives])
    if sorted(blocks) != expected:
        raise ConfigError(
            f"column blocks are given for parties {sorted(blocks)}; expected one for each of"
            f" {expected} (the label holder {active_party} included, even with no columns)"
        )
