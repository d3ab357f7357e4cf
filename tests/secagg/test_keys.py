from __future__ import annotations

import hashlib
import struct

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from tests.secagg.helpers import fixed_key_pair
from vfl.errors import ConfigError, WireError
from vfl.secagg import KeyPair, derive_pair_seed, public_key_from_bytes, public_key_to_bytes

P = 2**255 - 19
SMALL_ORDER = [
    0,
    1,
    P - 1,
    0x00B8495F16056286FDB1329CEB8D09DA6AC49FF1FAE35616AEB8413B7C7AEBE0,
    0x57119FD0DD4E22D8868E1C58C45C44045BEF839C55B1D0B1248C50A3BC959C5F,
]


def seed_between(a: int, b: int, *, run_id: bytes = b"run") -> bytes:
    return derive_pair_seed(
        fixed_key_pair(f"k/{a}"),
        fixed_key_pair(f"k/{b}").public_bytes,
        run_id=run_id,
        party_id=a,
        peer_id=b,
    )


@pytest.mark.parametrize(("a", "b"), [(1, 2), (7, 3), (1, 65535)])
def test_both_parties_of_a_pair_derive_the_same_32_byte_seed(a: int, b: int) -> None:
    # Execute
    seed_ab = seed_between(a, b)
    seed_ba = seed_between(b, a)

    # Assert
    assert seed_ab == seed_ba
    assert len(seed_ab) == 32


def test_seed_is_the_documented_hkdf_of_the_x25519_secret() -> None:
    # Prepare: the layout of docs/secagg.md, written out byte by byte
    low, high = fixed_key_pair("k/2"), fixed_key_pair("k/5")
    label = b"vfl/secagg/protocol0/v1"
    salt = label + bytes([3]) + b"run"
    info = label + b"/pair-seed" + struct.pack("<HH", 2, 5) + low.public_bytes + high.public_bytes
    shared = low.private_key.exchange(X25519PublicKey.from_public_bytes(high.public_bytes))
    expected = HKDF(hashes.SHA256(), 32, salt, info).derive(shared)

    # Execute
    seed = seed_between(5, 2)

    # Assert
    assert seed == expected


def test_seed_changes_with_the_run_the_pair_and_trailing_zeros_of_the_run_id() -> None:
    # Execute
    seeds = [
        seed_between(1, 2),
        seed_between(1, 2, run_id=b"run2"),
        seed_between(1, 2, run_id=b"run\x00"),
        seed_between(1, 3),
        seed_between(2, 3),
    ]

    # Assert
    assert len(set(seeds)) == len(seeds)


def test_seed_cannot_be_computed_from_the_public_transcript() -> None:
    # Prepare: everything the server sees, plus a key pair of its own
    a, b = fixed_key_pair("k/1"), fixed_key_pair("k/2")
    eavesdropper = fixed_key_pair("server")
    label = b"vfl/secagg/protocol0/v1"
    salt = label + bytes([3]) + b"run"
    info = label + b"/pair-seed" + struct.pack("<HH", 1, 2) + a.public_bytes + b.public_bytes
    public_inputs = [
        a.public_bytes + b.public_bytes,
        b.public_bytes + a.public_bytes,
        eavesdropper.private_key.exchange(X25519PublicKey.from_public_bytes(a.public_bytes)),
        eavesdropper.private_key.exchange(X25519PublicKey.from_public_bytes(b.public_bytes)),
    ]

    # Execute
    guesses = {HKDF(hashes.SHA256(), 32, salt, info).derive(ikm) for ikm in public_inputs}
    guesses |= {hashlib.sha256(ikm).digest() for ikm in public_inputs}

    # Assert
    assert seed_between(1, 2) not in guesses


def test_public_key_survives_a_round_trip_through_raw_bytes() -> None:
    # Prepare
    pair = KeyPair.generate()

    # Execute
    parsed = public_key_from_bytes(pair.public_bytes)

    # Assert
    assert len(pair.public_bytes) == 32
    assert public_key_to_bytes(parsed) == pair.public_bytes


@pytest.mark.parametrize("size", [0, 31, 33])
def test_public_key_of_wrong_length_is_a_wire_error(size: int) -> None:
    with pytest.raises(WireError, match=f"32 bytes, got {size}"):
        public_key_from_bytes(bytes(range(size)))


@pytest.mark.parametrize(
    ("u", "reason"),
    [(P, "u = p \\+ 0"), (P + 5, "u = p \\+ 5"), (2**255 + 9, "bit 255"), (2**256 - 1, "bit 255")],
)
def test_non_canonical_public_key_is_a_wire_error(u: int, reason: str) -> None:
    with pytest.raises(WireError, match=reason):
        public_key_from_bytes(u.to_bytes(32, "little"))


@pytest.mark.parametrize("u", SMALL_ORDER)
def test_small_order_public_key_is_refused(u: int) -> None:
    # Prepare
    raw = u.to_bytes(32, "little")

    # Execute / Assert: it is refused, and it really is of small order (the X25519 output is 0)
    with pytest.raises(WireError, match="small order"):
        public_key_from_bytes(raw)
    with pytest.raises(ValueError, match="shared key"):
        fixed_key_pair("k/1").private_key.exchange(X25519PublicKey.from_public_bytes(raw))


@pytest.mark.parametrize(
    ("a", "b", "run_id", "message"),
    [
        (1, 1, b"run", "two distinct party ids"),
        (0, 1, b"run", "party ids must be in 1..65535, got 0"),
        (1, 65536, b"run", "got 65536"),
        (1, 2, b"", "run_id must be 1..255 bytes, got 0"),
        (1, 2, bytes(256), "got 256"),
    ],
)
def test_invalid_ids_and_run_ids_are_config_errors(
    a: int, b: int, run_id: bytes, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        derive_pair_seed(
            fixed_key_pair("a"),
            fixed_key_pair("b").public_bytes,
            run_id=run_id,
            party_id=a,
            peer_id=b,
        )


def test_private_key_must_be_32_bytes() -> None:
    with pytest.raises(ConfigError, match="32 bytes, got 31"):
        KeyPair.from_private_bytes(bytes(31))
