"""Secure aggregation of integer counts: Protocol 0 of Bonawitz et al. (2016) with real crypto.

X25519 key agreement relayed by the server, HKDF-SHA256 pair seeds, ChaCha20 mask streams fresh
for every round, sample and coordinate, and arithmetic mod ``2^k``: the server learns only the
sum. ``docs/secagg.md`` describes the stages, the threat model and the byte layouts.
"""

from vfl.secagg.keys import KeyPair, derive_pair_seed, public_key_from_bytes, public_key_to_bytes
from vfl.secagg.masks import apply_masks, pair_mask, required_bits
from vfl.secagg.packing import decode_masked, encode_masked, masked_size
from vfl.secagg.protocol import (
    PartyState,
    SecAggParams,
    ServerState,
    aggregate,
    make_params,
    mask,
    relay_public_keys,
    setup_party,
    share_keys,
    unmask,
)

__all__ = [
    "KeyPair",
    "PartyState",
    "SecAggParams",
    "ServerState",
    "aggregate",
    "apply_masks",
    "decode_masked",
    "derive_pair_seed",
    "encode_masked",
    "make_params",
    "mask",
    "masked_size",
    "pair_mask",
    "public_key_from_bytes",
    "public_key_to_bytes",
    "relay_public_keys",
    "required_bits",
    "setup_party",
    "share_keys",
    "unmask",
]
