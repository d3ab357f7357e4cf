"""TLS material and party authentication for the gRPC transport.

Every connection is TLS: the server presents a certificate signed by a CA the parties trust.
Each party proves who it is with one or both of

- a **client certificate** (mutual TLS) signed by the CA the server trusts, whose common name or
  a subject alternative name is ``party-<id>`` for the party id it claims;
- a **token**: a secret the party sends in the call metadata; the server keeps only its SHA-256
  digest and compares digests in constant time.

The server refuses a party id that is not in the run, a missing or wrong credential, a
certificate that names another party, and a second process of a party that is connected. A
refusal never lists the run's party ids: a refused caller learns nothing about the run.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import grpc

from vfl.errors import ConfigError, ProtocolError

METADATA_PARTY = "vfl-party"
METADATA_TOKEN = "vfl-token"
METADATA_INSTANCE = "vfl-instance"
"""Call metadata a party sends: its id, its token (if any) and a random id of its process."""
METADATA_MODEL = "vfl-model"
"""A party started to predict also sends its model bundle's run fingerprint."""
METADATA_ACCEPTED = "vfl-accepted"
"""The server's initial metadata to a party it admitted (the party then counts as connected)."""

RefusalCode = Literal["unauthenticated", "permission_denied", "already_connected"]


class RefusedError(ProtocolError):
    """The server refused a party's connection; retrying with the same credentials is useless.

    Attributes:
        code: ``unauthenticated`` (missing or wrong credential), ``permission_denied``
            (a party that is not in the run) or ``already_connected`` (another process of
            the same party holds the connection).
    """

    def __init__(self, message: str, code: RefusalCode = "unauthenticated") -> None:
        super().__init__(message)
        self.code: RefusalCode = code


def party_name(party: int) -> str:
    """The name a party's certificate must carry (common name or SAN): ``party-<id>``."""
    return f"party-{party}"


def token_digest(token: str) -> str:
    """Hex SHA-256 of a token, as the server config stores it.

    Example:
        >>> token_digest("secret")[:16]
        '2bb80d537b1da3e3'
    """
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class ServerTls:
    """The server's TLS material (PEM bytes).

    Attributes:
        cert_chain: The server certificate (and intermediates).
        private_key: Its private key.
        client_ca: The CA that signs party certificates; required for mutual TLS.
        mutual: Require every party to present a certificate signed by ``client_ca``.
    """

    cert_chain: bytes
    private_key: bytes
    client_ca: bytes = b""
    mutual: bool = False

    def __post_init__(self) -> None:
        if self.mutual and not self.client_ca:
            raise ConfigError("mutual TLS needs the CA that signs party certificates (client_ca)")

    def credentials(self) -> grpc.ServerCredentials:
        """GRPC server credentials."""
        return grpc.ssl_server_credentials(
            [(self.private_key, self.cert_chain)],
            root_certificates=self.client_ca or None,
            require_client_auth=self.mutual,
        )


@dataclass(frozen=True)
class PartyTls:
    """A party's TLS material (PEM bytes).

    Attributes:
        root_ca: The CA that signed the server's certificate.
        cert_chain: The party's certificate, for mutual TLS (empty: none).
        private_key: Its private key.
        server_name: The name to check in the server's certificate when it differs from the
            host in the address (for example when dialing an IP the certificate does not name).
        ca_file: Where ``root_ca`` came from, to name it in errors.
        cert_file: Where ``cert_chain`` came from, to name it in errors.
    """

    root_ca: bytes
    cert_chain: bytes = b""
    private_key: bytes = b""
    server_name: str = ""
    ca_file: str = "the configured CA"
    cert_file: str = "the configured certificate"

    def __post_init__(self) -> None:
        if bool(self.cert_chain) != bool(self.private_key):
            raise ConfigError("a party certificate needs its private key, and vice versa")

    def credentials(self) -> grpc.ChannelCredentials:
        """GRPC channel credentials."""
        return grpc.ssl_channel_credentials(
            root_certificates=self.root_ca,
            private_key=self.private_key or None,
            certificate_chain=self.cert_chain or None,
        )

    def options(self) -> list[tuple[str, str]]:
        """Channel options (the TLS name override, if set)."""
        if not self.server_name:
            return []
        return [("grpc.ssl_target_name_override", self.server_name)]


@dataclass(frozen=True)
class PartyCredential:
    """What the server checks for one party.

    Attributes:
        token_sha256: Hex SHA-256 of the party's token; empty if it authenticates by
            certificate alone.
    """

    token_sha256: str = ""

    def __post_init__(self) -> None:
        digest = self.token_sha256
        if digest and (len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest)):
            raise ConfigError(f"token_sha256 must be 64 lowercase hex digits, got {digest!r}")


class Authenticator:
    """Decides which party a new connection belongs to, or refuses it.

    Args:
        credentials: The parties of the run and their credentials.
        mutual: Whether connections carry client certificates (mutual TLS) to check.
        model: The run fingerprint of the server's model when it predicts (every party must
            bring a bundle of that run); empty when it trains.
    """

    def __init__(
        self, credentials: Mapping[int, PartyCredential], *, mutual: bool, model: str = ""
    ) -> None:
        for party, credential in credentials.items():
            if not mutual and not credential.token_sha256:
                raise ConfigError(
                    f"party {party} has no credential: give it a token_sha256 or turn on mutual TLS"
                )
        self.credentials = dict(credentials)
        self.mutual = mutual
        self.model = model

    def check(self, metadata: Mapping[str, str], peer_names: Sequence[str]) -> tuple[int, str]:
        """The party id and process instance of a connection.

        Args:
            metadata: The call metadata.
            peer_names: Common name and subject alternative names of the client certificate
                (empty without one).

        Raises:
            RefusedError: naming the reason.
        """
        claimed = metadata.get(METADATA_PARTY, "")
        if not claimed.isdigit():
            raise RefusedError(f"no valid party id in the call metadata (got {claimed!r})")
        party = int(claimed)
        credential = self.credentials.get(party)
        if credential is None:
            raise RefusedError(f"party {party} is not in this run", "permission_denied")
        if self.mutual and party_name(party) not in peer_names:
            raise RefusedError(
                f"party {party}'s client certificate names {list(peer_names)}, not"
                f" {party_name(party)!r}"
            )
        if credential.token_sha256:
            digest = token_digest(metadata.get(METADATA_TOKEN, ""))
            if not hmac.compare_digest(digest, credential.token_sha256):
                raise RefusedError(f"party {party} presented a missing or wrong token")
        instance = metadata.get(METADATA_INSTANCE, "")
        if not instance:
            raise RefusedError(f"party {party} sent no process instance id")
        return party, instance

    def check_model(self, party: int, metadata: Mapping[str, str]) -> None:
        """Refuse an authenticated party whose model bundle is not of the server's run.

        Raises:
            RefusedError: naming both fingerprints (``permission_denied``).
        """
        offered = metadata.get(METADATA_MODEL, "")
        if offered == self.model:
            return
        if not self.model:
            raise RefusedError(
                f"party {party} was started to predict (--predict or --serve), but this server"
                " trains",
                "permission_denied",
            )
        if not offered:
            raise RefusedError(
                f"party {party} was started to train, but this server predicts: start it with"
                " --predict or --serve",
                "permission_denied",
            )
        raise RefusedError(
            f"party {party}'s model bundle comes from another run (fingerprint {offered[:12]};"
            f" the server's model: {self.model[:12]}): give it the bundle exported by the run"
            " that trained the server's model",
            "permission_denied",
        )


class HandshakeError(ProtocolError):
    """The TLS handshake with the server failed for a reason that retrying cannot fix."""


_LIBRARY_REASON = re.compile(r"OPENSSL_internal:([A-Z0-9_]+)(?:: ([^:]+))?")


def handshake_problem(details: str, tls: PartyTls, host: str) -> str | None:
    """What a party's failed TLS handshake says about the certificates, or ``None``.

    Args:
        details: The gRPC error details of a connection that was never accepted.
        tls: The party's TLS material (its file names go into the message).
        host: The host the party dialed.

    Returns:
        A sentence naming the certificate problem and the file to check, or ``None`` when
        ``details`` are not about the party's check of the server's certificate.
    """
    name = tls.server_name or host
    if "Hostname Verification" in details or "No match found for server name" in details:
        return (
            f"the server's certificate does not name {name!r}, the name dialed: dial a name it"
            " carries, or set tls.server_name to one"
        )
    if "andshake failed" not in details:
        return None
    found = _LIBRARY_REASON.search(details)
    reason = (found.group(2) or found.group(1)).strip() if found else "no reason given"
    if "expired" in reason or "not yet valid" in reason:
        return f"the server's certificate is outside its validity period ({reason})"
    if found is not None and found.group(1) in ("CERTIFICATE_VERIFY_FAILED", "BAD_SIGNATURE"):
        return (
            f"the server's certificate is not signed by the CA in {tls.ca_file} ({reason}):"
            " give the CA that signed the server's certificate"
        )
    return f"the TLS handshake failed ({reason})"


def rejected_certificate(address: str, tls: PartyTls, closures: int = 3) -> str:
    """Why a server that keeps closing a party's TLS handshake is taken to reject it.

    With TLS 1.3 a server checks the client's certificate after the client has finished its
    handshake, so a party only sees the connection closed, never the reason; a server that
    is merely restarting refuses connections instead.
    """
    closed = (
        f"the server at {address} closed the connection during the TLS handshake {closures}"
        " times in a row"
    )
    if not tls.cert_chain:
        return f"{closed}: it requires a client certificate (mutual TLS) and tls.cert is not set"
    return (
        f"{closed}: it does not accept this party's certificate {tls.cert_file} (signed by a CA"
        " the server does not trust, expired, or not a client certificate)"
    )
