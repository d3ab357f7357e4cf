"""Protocol 0 secure aggregation (Bonawitz et al. 2016) as stage functions on small state records.

The stages follow the order of Flower's SecAgg+ workflow, without its dropout recovery:

1. **setup**: the server fixes ``SecAggParams`` (``make_params``) and sends them to every party;
   each party calls ``setup_party``, which draws a fresh X25519 key pair, and announces
   ``PartyState.public_key``.
2. **share keys**: the server calls ``relay_public_keys`` on the announced public keys and sends
   the resulting directory to every party; each party calls ``share_keys``, which derives one
   pair seed per peer. The server only ever holds public keys.
3. **mask**: every round, each party calls ``mask`` on its ``(B, P)`` block of counts in
   ``{0..b}`` and sends ``encode_masked`` of the result.
4. **unmask**: the server decodes the blocks and calls ``unmask`` (or the bare ``aggregate``),
   which only ever sees masked blocks and returns the sum of the counts.

State records are frozen; every stage returns a new one. See ``docs/secagg.md`` for the threat
model and the byte layouts.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from vfl.errors import ConfigError, ProtocolError, WireError
from vfl.secagg.keys import (
    KeyPair,
    check_party_id,
    derive_pair_seed,
    hkdf_salt,
    public_key_from_bytes,
)
from vfl.secagg.masks import Counts, apply_masks, check_bits, mask_nonce, required_bits, sum_mod


@dataclass(frozen=True)
class SecAggParams:
    """What every participant of one secure-aggregation run agrees on.

    Attributes:
        run_id: 1..255 bytes naming the run; bound into every pair seed.
        party_ids: The parties, strictly increasing, each in 1..65535.
        max_count: The largest count a party may contribute (PBM's ``b``).
        bits: The modulus exponent ``k``; at least ``ceil(log2(M b + 1))``.
    """

    run_id: bytes
    party_ids: tuple[int, ...]
    max_count: int
    bits: int

    def __post_init__(self) -> None:
        hkdf_salt(self.run_id)
        for party_id in self.party_ids:
            check_party_id(party_id)
        if any(a >= b for a, b in zip(self.party_ids, self.party_ids[1:], strict=False)):
            raise ConfigError(
                f"party_ids must be distinct and increasing, got {list(self.party_ids)}"
            )
        needed = required_bits(num_parties=len(self.party_ids), max_count=self.max_count)
        check_bits(self.bits)
        if self.bits < needed:
            raise ConfigError(
                f"bits={self.bits} cannot hold a sum of {len(self.party_ids)} counts in"
                f" 0..{self.max_count}: need bits >= ceil(log2(M b + 1)) = {needed}"
            )

    @property
    def max_sum(self) -> int:
        """``M b``: the largest value the true sum can take."""
        return len(self.party_ids) * self.max_count


@dataclass(frozen=True)
class ServerState:
    """The server's view: parameters and the public-key directory, nothing secret.

    Attributes:
        params: The run's parameters.
        directory: Party id -> raw 32-byte public key, filled by ``relay_public_keys``.
    """

    params: SecAggParams
    directory: Mapping[int, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class PartyState:
    """One party's secrets and progress.

    Attributes:
        params: The run's parameters.
        party_id: This party's id (one of ``params.party_ids``).
        key_pair: This party's X25519 key pair.
        pair_seeds: Peer id -> 32-byte pair seed, filled by ``share_keys``.
        last_nonce: The last ``(round, channel)`` masked; nonces must increase.
    """

    params: SecAggParams
    party_id: int
    key_pair: KeyPair = field(repr=False)
    pair_seeds: Mapping[int, bytes] = field(default_factory=dict, repr=False)
    last_nonce: tuple[int, int] | None = None

    @property
    def public_key(self) -> bytes:
        """The raw public key this party announces."""
        return self.key_pair.public_bytes


def make_params(
    *, run_id: bytes, party_ids: Iterable[int], max_count: int, bits: int | None = None
) -> SecAggParams:
    """Parameters for a run; ``bits`` defaults to the least valid ``ceil(log2(M b + 1))``.

    Example:
        >>> make_params(run_id=b"run-1", party_ids=[2, 1, 3, 4], max_count=16).bits
        7

    Raises:
        ConfigError: if any value is invalid (see ``SecAggParams``).
    """
    ids = tuple(sorted(party_ids))
    if bits is None:
        bits = required_bits(num_parties=len(ids), max_count=max_count)
    return SecAggParams(run_id=bytes(run_id), party_ids=ids, max_count=max_count, bits=bits)


def setup_party(
    params: SecAggParams, *, party_id: int, key_pair: KeyPair | None = None
) -> PartyState:
    """Stage 1 (party): a fresh key pair (or ``key_pair``, for reproducible tests).

    Raises:
        ConfigError: if ``party_id`` is not one of ``params.party_ids``.
    """
    if party_id not in params.party_ids:
        raise ConfigError(f"party_id {party_id} is not one of {list(params.party_ids)}")
    return PartyState(params, party_id, key_pair or KeyPair.generate())


def relay_public_keys(server: ServerState, announced: Mapping[int, bytes]) -> ServerState:
    """Stage 2 (server): check the announced public keys and keep them as the directory.

    Inputs and outputs are public keys only: the server cannot compute any pair seed.

    Raises:
        ProtocolError: if a party is missing, an unknown id announced, or two keys are equal.
        WireError: if a key is not a valid X25519 public key (naming the party).
    """
    _check_party_set(announced, server.params.party_ids, what="public keys")
    directory = {party_id: bytes(announced[party_id]) for party_id in server.params.party_ids}
    _check_public_keys(directory)
    return replace(server, directory=directory)


def share_keys(state: PartyState, directory: Mapping[int, bytes]) -> PartyState:
    """Stage 2 (party): derive the pair seed shared with every peer in ``directory``.

    Raises:
        ProtocolError: if the directory does not list exactly the run's parties, lists this party
            under another key than its own, or repeats a key.
        WireError: if a peer's key is not a valid X25519 public key.
    """
    _check_party_set(directory, state.params.party_ids, what="directory entries")
    if bytes(directory[state.party_id]) != state.public_key:
        raise ProtocolError(f"the directory lists another public key for party {state.party_id}")
    _check_public_keys(directory)
    seeds = {
        peer_id: derive_pair_seed(
            state.key_pair,
            bytes(public),
            run_id=state.params.run_id,
            party_id=state.party_id,
            peer_id=peer_id,
        )
        for peer_id, public in directory.items()
        if peer_id != state.party_id
    }
    return replace(state, pair_seeds=seeds)


def mask(
    state: PartyState, counts: npt.ArrayLike, *, round: int, channel: int = 0
) -> tuple[PartyState, Counts]:
    """Stage 3 (party): mask a block of counts for ``(round, channel)``; see ``masks``.

    Each ``(round, channel)`` must be greater than the last one masked: masking two blocks under
    one nonce would hand the server their difference. Returns the new state and the masked block.

    Raises:
        ProtocolError: before ``share_keys``, or if ``(round, channel)`` does not increase.
        ConfigError: if a count is not an integer in ``0..max_count``, or ``round``/``channel``
            is out of range.
    """
    if not state.pair_seeds:
        raise ProtocolError(f"party {state.party_id} has no pair seeds: call share_keys first")
    mask_nonce(round=round, channel=channel)
    nonce = (round, channel)
    if state.last_nonce is not None and nonce <= state.last_nonce:
        raise ProtocolError(
            f"party {state.party_id} refuses to mask (round, channel) = {nonce} after"
            f" {state.last_nonce}: a reused nonce reveals the difference of two count blocks"
        )
    values = _checked_counts(counts, max_count=state.params.max_count)
    masked = apply_masks(
        values,
        state.pair_seeds,
        party_id=state.party_id,
        round=round,
        channel=channel,
        bits=state.params.bits,
    )
    return replace(state, last_nonce=nonce), masked


def unmask(server: ServerState, masked: Mapping[int, npt.NDArray[np.integer[Any]]]) -> Counts:
    """Stage 4 (server): the sum of the counts from every party's masked block.

    Raises:
        ProtocolError: if a party's block is missing (Protocol 0 cannot remove the masks of a
            party that dropped out), an unknown party sent one, or the sum exceeds ``M b`` (the
            masks did not cancel: a party used other keys, another round or another channel).
        ConfigError: as in ``aggregate``.
    """
    params = server.params
    _check_party_set(masked, params.party_ids, what="masked blocks")
    total = aggregate(masked, bits=params.bits)
    if total.size and int(total.max()) > params.max_sum:
        raise ProtocolError(
            f"unmasked sum {int(total.max())} exceeds M b = {params.max_sum}: the masks did not"
            " cancel (a party used other keys, another round or another channel)"
        )
    return total


def aggregate(masked: Mapping[int, npt.NDArray[np.integer[Any]]], *, bits: int) -> Counts:
    """The element-wise sum of masked blocks mod ``2^k``; the server's only view of the counts.

    With every party's block present the pair masks cancel (VFL-PBM paper §2.3, after Bonawitz et
    al. 2016) and, since the true sum is below ``2^k``, the result is exactly the sum of counts.

    Raises:
        ConfigError: if ``masked`` is empty, the blocks differ in shape, or a value is not an
            integer in ``0..2^k - 1``.
    """
    check_bits(bits)
    if not masked:
        raise ConfigError("aggregate needs at least one masked block, got none")
    shapes = {party_id: block.shape for party_id, block in masked.items()}
    if len(set(shapes.values())) != 1:
        raise ConfigError(f"masked blocks must share one shape, got {shapes}")
    for party_id, block in masked.items():
        _check_range(block, top=(1 << bits) - 1, what=f"party {party_id}'s masked block")
    return sum_mod((block.astype(np.uint64) for block in masked.values()), bits=bits)


def _check_party_set(received: Collection[int], expected: tuple[int, ...], *, what: str) -> None:
    missing = sorted(set(expected) - set(received))
    unknown = sorted(set(received) - set(expected))
    if missing or unknown:
        raise ProtocolError(
            f"{what}: expected exactly parties {list(expected)}; missing {missing}, unknown"
            f" {unknown} (Protocol 0 has no dropout recovery)"
        )


def _check_public_keys(directory: Mapping[int, bytes]) -> None:
    for party_id, public in directory.items():
        try:
            public_key_from_bytes(public)
        except WireError as error:
            raise WireError(f"party {party_id}'s public key: {error}") from error
    if len(set(directory.values())) != len(directory):
        raise ProtocolError("two parties announced the same public key")


def _checked_counts(counts: npt.ArrayLike, *, max_count: int) -> Counts:
    values = np.asarray(counts)
    _check_range(values, top=max_count, what="counts")
    return values.astype(np.uint64)


def _check_range(values: npt.NDArray[Any], *, top: int, what: str) -> None:
    if values.dtype.kind not in "ui":
        raise ConfigError(f"{what} must be integers, got dtype {values.dtype}")
    if values.size and (int(values.min()) < 0 or int(values.max()) > top):
        raise ConfigError(
            f"{what} must lie in 0..{top}, got values in {int(values.min())}..{int(values.max())}"
        )
