"""Pairwise key agreement: X25519 key pairs, public-key bytes, and HKDF-SHA256 pair seeds.

Every party holds an X25519 key pair (RFC 7748 §5) and announces only its 32-byte public key;
the server relays public keys and never sees a private key. Parties ``i`` and ``j`` both compute
the shared secret ``X25519(sk_i, pk_j) = X25519(sk_j, pk_i)`` and expand it with HKDF-SHA256
(RFC 5869 §2) into a 32-byte seed for their mask stream (``vfl.secagg.masks``). This is the key
agreement of Bonawitz et al. 2017 ("Practical Secure Aggregation for Privacy-Preserving Machine
Learning") applied to Protocol 0 of Bonawitz et al. 2016 (arXiv:1611.04482); see
``docs/secagg.md`` for the byte layout of the HKDF salt and info.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from vfl.errors import ConfigError, WireError

PROTOCOL_LABEL = b"vfl/secagg/protocol0/v1"
"""Domain-separation label bound into every HKDF salt and info."""

KEY_SIZE = 32
"""Bytes of an X25519 public or private key, and of a pair seed."""

MAX_PARTY_ID = 0xFFFF
"""Party ids are u16 like the wire's sender field; 0 is the server, so parties are 1..65535."""

MAX_RUN_ID_SIZE = 255

_FIELD_PRIME = 2**255 - 19
# The canonical u-coordinates of the points of small order (the 8-torsion; RFC 7748 §6.1, §7):
# X25519 with any clamped scalar maps them to 0, so a peer announcing one would force a known
# "shared" secret.
_SMALL_ORDER_U = frozenset(
    {
        0,
        1,
        _FIELD_PRIME - 1,
        0x00B8495F16056286FDB1329CEB8D09DA6AC49FF1FAE35616AEB8413B7C7AEBE0,
        0x57119FD0DD4E22D8868E1C58C45C44045BEF839C55B1D0B1248C50A3BC959C5F,
    }
)
_U16 = struct.Struct("<H")


@dataclass(frozen=True)
class KeyPair:
    """A party's X25519 key pair; only ``public_bytes`` ever leaves the party.

    Attributes:
        private_key: The secret scalar (never serialized by this package, never in ``repr``).
        public_bytes: The raw 32-byte public key to announce.
    """

    private_key: X25519PrivateKey = field(repr=False)
    public_bytes: bytes

    @classmethod
    def generate(cls) -> KeyPair:
        """A fresh key pair from the operating system's CSPRNG (through OpenSSL)."""
        return cls.from_private_key(X25519PrivateKey.generate())

    @classmethod
    def from_private_bytes(cls, raw: bytes) -> KeyPair:
        """The key pair of a given 32-byte private key (tests and reproducible fixtures only).

        Raises:
            ConfigError: if ``raw`` is not 32 bytes.
        """
        if len(raw) != KEY_SIZE:
            raise ConfigError(f"an X25519 private key is {KEY_SIZE} bytes, got {len(raw)}")
        return cls.from_private_key(X25519PrivateKey.from_private_bytes(raw))

    @classmethod
    def from_private_key(cls, private_key: X25519PrivateKey) -> KeyPair:
        """Wrap an existing ``cryptography`` private key."""
        return cls(private_key, public_key_to_bytes(private_key.public_key()))


def public_key_to_bytes(key: X25519PublicKey) -> bytes:
    """The raw 32-byte little-endian u-coordinate of ``key`` (RFC 7748 §5)."""
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def public_key_from_bytes(data: bytes | memoryview) -> X25519PublicKey:
    """Parse a received public key, refusing anything but a canonical, full-order encoding.

    RFC 7748 §5 lets decoders mask bit 255 and reduce u mod p; we refuse both instead, so each key
    has exactly one encoding, and we refuse the small-order points, which would make the shared
    secret all zeros (RFC 7748 §6.1).

    Raises:
        WireError: if ``data`` is not 32 bytes, has bit 255 set, encodes ``u >= 2^255 - 19``, or
            is a point of small order.
    """
    raw = bytes(data)
    if len(raw) != KEY_SIZE:
        raise WireError(f"an X25519 public key is {KEY_SIZE} bytes, got {len(raw)}")
    u = int.from_bytes(raw, "little")
    if u >> 255:
        raise WireError("non-canonical X25519 public key: bit 255 is set")
    if u >= _FIELD_PRIME:
        raise WireError(f"non-canonical X25519 public key: u = p + {u - _FIELD_PRIME} >= p")
    if u in _SMALL_ORDER_U:
        raise WireError(f"X25519 public key of small order refused: {raw.hex()}")
    return X25519PublicKey.from_public_bytes(raw)


def derive_pair_seed(
    key_pair: KeyPair, peer_public: bytes, *, run_id: bytes, party_id: int, peer_id: int
) -> bytes:
    """The 32-byte seed that parties ``party_id`` and ``peer_id`` share in run ``run_id``.

    ``seed = HKDF-SHA256(IKM = X25519(sk_self, pk_peer), salt, info, L = 32)`` (RFC 5869 §2.2-2.3)
    with ``salt`` and ``info`` from ``hkdf_salt`` and ``hkdf_info``. Both parties of a pair get
    the same seed: X25519 is symmetric and the info orders the pair canonically (lower id first).

    Raises:
        ConfigError: if the ids are equal or outside 1..65535, or ``run_id`` is not 1..255 bytes.
        WireError: if ``peer_public`` is not a valid public key (see ``public_key_from_bytes``).
    """
    check_party_id(party_id)
    check_party_id(peer_id)
    if party_id == peer_id:
        raise ConfigError(f"a pair needs two distinct party ids, got {party_id} twice")
    shared = key_pair.private_key.exchange(public_key_from_bytes(peer_public))
    low, high = sorted(((party_id, key_pair.public_bytes), (peer_id, bytes(peer_public))))
    hkdf = HKDF(
        algorithm=hashes.SHA256(),
        length=KEY_SIZE,
        salt=hkdf_salt(run_id),
        info=hkdf_info(low_id=low[0], high_id=high[0], low_public=low[1], high_public=high[1]),
    )
    return hkdf.derive(shared)


def hkdf_salt(run_id: bytes) -> bytes:
    """``PROTOCOL_LABEL || u8 len(run_id) || run_id``: binds the seed to the run.

    The length byte keeps run ids that differ only by trailing zeros apart (HMAC would pad the
    key with zeros and merge them).

    Raises:
        ConfigError: if ``run_id`` is empty or longer than 255 bytes.
    """
    if not 1 <= len(run_id) <= MAX_RUN_ID_SIZE:
        raise ConfigError(f"run_id must be 1..{MAX_RUN_ID_SIZE} bytes, got {len(run_id)}")
    return PROTOCOL_LABEL + bytes([len(run_id)]) + bytes(run_id)


def hkdf_info(*, low_id: int, high_id: int, low_public: bytes, high_public: bytes) -> bytes:
    """``PROTOCOL_LABEL || "/pair-seed" || u16 low_id || u16 high_id || pk_low || pk_high``.

    Binding both public keys (as libsodium's ``crypto_kx`` does) ties the seed to this exact key
    exchange, not only to the shared point.
    """
    return (
        PROTOCOL_LABEL
        + b"/pair-seed"
        + _U16.pack(low_id)
        + _U16.pack(high_id)
        + low_public
        + high_public
    )


def check_party_id(party_id: int) -> None:
    """Refuse a party id outside 1..65535 (0 is the server's id on the wire).

    Raises:
        ConfigError: naming the id.
    """
    if not 1 <= party_id <= MAX_PARTY_ID:
        raise ConfigError(f"party ids must be in 1..{MAX_PARTY_ID}, got {party_id}")
