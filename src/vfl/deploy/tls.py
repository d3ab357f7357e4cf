"""TLS files and tokens of a deployment, read and checked before anything is dialed or bound.

A file that is missing, unreadable, not PEM, a key that does not belong to its certificate, or a
certificate outside its validity period stops the process at once with a ``ConfigError`` naming
the config key and the file, instead of surfacing later as a failure to listen or a handshake
that never succeeds.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from vfl.deploy.config import ServerTlsConfig
from vfl.deploy.party_config import PartyTlsConfig
from vfl.errors import ConfigError
from vfl.transport.security import PartyTls, ServerTls


@dataclass(frozen=True)
class PemFile:
    """One configured file: the config key that names it, and its path."""

    key: str
    path: str

    def read(self) -> bytes:
        """The file's bytes.

        Raises:
            ConfigError: naming the key and the file if it is missing or unreadable.
        """
        try:
            return Path(self.path).read_bytes()
        except FileNotFoundError:
            raise ConfigError(f"{self.key}: no such file {self.path!r}") from None
        except OSError as error:
            raise ConfigError(f"{self.key}: cannot read {self.path!r}: {error.strerror}") from None

    def certificates(self) -> tuple[bytes, list[x509.Certificate]]:
        """The file's bytes and the PEM certificates in it (at least one)."""
        data = self.read()
        try:
            return data, x509.load_pem_x509_certificates(data)
        except ValueError:
            raise ConfigError(
                f"{self.key}: {self.path!r} is not a PEM certificate (expected"
                " '-----BEGIN CERTIFICATE-----' blocks)"
            ) from None

    def private_key(self) -> tuple[bytes, PrivateKeyTypes]:
        """The file's bytes and the unencrypted PEM private key in it."""
        data = self.read()
        try:
            return data, serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as error:
            raise ConfigError(
                f"{self.key}: {self.path!r} is not an unencrypted PEM private key ({error})"
            ) from None


def server_tls(config: ServerTlsConfig, *, section: str = "deployment.tls") -> ServerTls:
    """The server's TLS material from the files its config names, checked.

    Raises:
        ConfigError: naming the key and file of a missing, unparsable, mismatched or expired
            file.
    """
    cert = PemFile(f"{section}.cert", config.cert)
    key = PemFile(f"{section}.key", config.key)
    chain = _checked_pair(cert, key)
    client_ca = PemFile(f"{section}.ca", config.ca).certificates()[0] if config.ca else b""
    return ServerTls(chain, key.read(), client_ca=client_ca, mutual=config.mutual)


def party_tls(tls: PartyTlsConfig) -> PartyTls:
    """A party's TLS material from the files its config names, checked.

    Raises:
        ConfigError: naming the key and file of a missing, unparsable, mismatched or expired
            file.
    """
    ca = PemFile("tls.ca", tls.ca)
    root_ca = ca.certificates()[0]
    if not tls.cert:
        return PartyTls(root_ca, server_name=tls.server_name, ca_file=tls.ca)
    key = PemFile("tls.key", tls.key)
    chain = _checked_pair(PemFile("tls.cert", tls.cert), key)
    return PartyTls(
        root_ca,
        chain,
        key.read(),
        server_name=tls.server_name,
        ca_file=tls.ca,
        cert_file=tls.cert,
    )


def read_token(path: str) -> str:
    """The token in ``token_file`` (surrounding whitespace removed).

    Raises:
        ConfigError: if the file is missing, unreadable or empty.
    """
    token = PemFile("token_file", path).read().decode(errors="replace").strip()
    if not token:
        raise ConfigError(f"token_file: {path!r} is empty; it must hold the party's token")
    return token


def _checked_pair(cert: PemFile, key: PemFile) -> bytes:
    """The certificate chain's bytes, once its first certificate is valid now and ``key``'s."""
    data, chain = cert.certificates()
    _, private = key.private_key()
    leaf = chain[0]
    if leaf.public_key() != private.public_key():
        raise ConfigError(
            f"{key.key}: {key.path!r} is not the private key of the certificate in {cert.key}"
            f" ({cert.path!r})"
        )
    now = datetime.datetime.now(datetime.UTC)
    if now > leaf.not_valid_after_utc:
        raise ConfigError(
            f"{cert.key}: the certificate in {cert.path!r} expired on"
            f" {leaf.not_valid_after_utc:%Y-%m-%d %H:%M} UTC; issue a new one"
        )
    if now < leaf.not_valid_before_utc:
        raise ConfigError(
            f"{cert.key}: the certificate in {cert.path!r} is valid only from"
            f" {leaf.not_valid_before_utc:%Y-%m-%d %H:%M} UTC (is this host's clock right?)"
        )
    return data
