"""Test helpers: reproducible key pairs and a full in-memory run of the four stages."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import numpy as np

from vfl.secagg import (
    KeyPair,
    PartyState,
    SecAggParams,
    ServerState,
    mask,
    relay_public_keys,
    setup_party,
    share_keys,
)


def fixed_key_pair(label: str) -> KeyPair:
    """A key pair from a public label: reproducible, therefore for tests only."""
    return KeyPair.from_private_bytes(hashlib.sha256(label.encode()).digest())


def connect(
    params: SecAggParams, *, key_label: str | None = "fixed"
) -> tuple[ServerState, dict[int, PartyState]]:
    """Stages 1-2 for every party; ``key_label=None`` draws fresh keys from the OS."""
    parties = {
        party_id: setup_party(
            params,
            party_id=party_id,
            key_pair=None if key_label is None else fixed_key_pair(f"{key_label}/{party_id}"),
        )
        for party_id in params.party_ids
    }
    announced = {party_id: state.public_key for party_id, state in parties.items()}
    server = relay_public_keys(ServerState(params), announced)
    return server, {p: share_keys(state, server.directory) for p, state in parties.items()}


def mask_all(
    parties: dict[int, PartyState],
    counts: Mapping[int, np.ndarray],
    *,
    round: int,
    channel: int = 0,
) -> dict[int, np.ndarray]:
    """Stage 3 for every party (updates ``parties`` in place with the new states)."""
    masked = {}
    for party_id, state in parties.items():
        parties[party_id], masked[party_id] = mask(
            state, counts[party_id], round=round, channel=channel
        )
    return masked
