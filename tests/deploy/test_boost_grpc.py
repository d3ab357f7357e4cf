"""SecureBoost over the real gRPC transport with mutual TLS, gradients over the frame limit.

The passive holders answer through ``PartyLink``s that accept frames of at most ``LIMIT`` bytes,
far fewer than one tree's gradients take, so every tree's gradients travel in pieces.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.boost.helpers import short_keys, vertical_table
from tests.deploy.loopback import start_loopback
from vfl.boost import BoostParams, secureboost_structure
from vfl.boost.active import ActiveBooster
from vfl.boost.link import TransportLink, local_link, passive_endpoint
from vfl.boost.passive import PassiveBooster
from vfl.deploy.certs import PkiFiles
from vfl.errors import ProtocolError
from vfl.transport.retry import RetryPolicy

LIMIT = 4096
"""Frame bytes the holders accept: 120 rows of 128-byte ciphertexts (15 KB) do not fit."""

PARAMS = BoostParams(num_trees=2, max_depth=2, learning_rate=0.3, max_bin=8)
PATIENT = RetryPolicy(attempts=1, timeout_s=20.0, backoff_s=0.05, max_backoff_s=0.1)


def holders() -> tuple[ActiveBooster, dict[int, PassiveBooster], np.ndarray, dict[int, np.ndarray]]:
    labels, blocks = vertical_table(120, (1, 2, 2), seed=5)
    active = ActiveBooster(1, labels, blocks[1], PARAMS, short_keys(), workers=1)
    passives = {
        p: PassiveBooster(p, blocks[p], max_bin=PARAMS.max_bin, insecure_test_key=True)
        for p in (2, 3)
    }
    return active, passives, labels, blocks


def grow(active: ActiveBooster, link: TransportLink) -> None:
    active.connect(link, [2, 3])
    for _ in range(PARAMS.num_trees):
        active.grow_tree(link)


def test_gradients_over_the_frame_limit_arrive_whole_over_grpc(pki: PkiFiles) -> None:
    # Prepare
    active, passives, _, _ = holders()
    endpoints = {p: passive_endpoint(holder).handle_frame for p, holder in passives.items()}
    loopback = start_loopback(pki, endpoints, policy=PATIENT, max_bytes=LIMIT)
    link = TransportLink(loopback.transport, max_frame_bytes=LIMIT)
    in_process, in_process_passives, _, _ = holders()

    # Execute
    grow(active, link)
    grow(in_process, local_link(in_process_passives))

    # Assert
    ledger = loopback.transport.ledger
    assert ledger.messages(kind="BoostPart", party=2) >= 2 * 4  # 15 KB in pieces of <= 4 KB
    assert ledger.messages(kind="BoostGradients") == 0
    tables = {1: active.splits, **{p: h.splits for p, h in passives.items()}}
    expected = {1: in_process.splits, **{p: h.splits for p, h in in_process_passives.items()}}
    assert [secureboost_structure(t, tables) for t in active.trees] == [
        secureboost_structure(t, expected) for t in in_process.trees
    ]
    assert np.array_equal(active.margins, in_process.margins)


def test_without_pieces_the_holders_refuse_the_gradients(pki: PkiFiles) -> None:
    # Prepare: the negative control: the same request sent whole is over the holders' limit
    active, passives, _, _ = holders()
    endpoints = {p: passive_endpoint(holder).handle_frame for p, holder in passives.items()}
    quick = RetryPolicy(attempts=1, timeout_s=2.0, backoff_s=0.05, max_backoff_s=0.1)
    loopback = start_loopback(pki, endpoints, policy=quick, max_bytes=LIMIT)
    link = TransportLink(loopback.transport, max_frame_bytes=10 * LIMIT)
    active.connect(link, [2, 3])

    # Execute / Assert
    with pytest.raises(ProtocolError, match="party 2 failed"):
        active.grow_tree(link)
