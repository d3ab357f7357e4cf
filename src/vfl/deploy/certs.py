"""``vfl certs``: a test certificate authority, a server certificate, party certificates, tokens.

For trials and tests only: a real deployment uses certificates from the organisations' own CA.
Keys are ECDSA P-256; certificates are signed with SHA-256. Party certificates carry
``party-<id>`` as common name and as DNS subject alternative name, which is what the server
checks under mutual TLS (``vfl.transport.security``). Private keys and tokens are written with
mode 0600. Every argument is checked, and every key and certificate made in memory, before
anything in the directory changes. Files already there are never overwritten: without ``force``
their presence is an error, and with it they are first moved to a ``replaced-<UTC time>``
folder.
"""

from __future__ import annotations

import datetime
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from vfl.deploy.certificate import certificate, general_name
from vfl.errors import ConfigError
from vfl.results.files import failure_line
from vfl.transport.security import party_name, token_digest

CA_NAME = "vfl test CA"
CLIENT_PREFIX = "client-"
"""Certificates of online scoring callers name ``client-<name>`` (``vfl serve``)."""
DEFAULT_SERVER_NAMES = ("localhost", "127.0.0.1")
MAX_DAYS = 36500
"""The longest validity of a test certificate: 100 years (a later date overflows)."""


@dataclass(frozen=True)
class PartyFiles:
    """One party's certificate, key and token files, and the token's digest."""

    cert: Path
    key: Path
    token: Path
    token_sha256: str


@dataclass(frozen=True)
class PkiFiles:
    """The files ``create_test_pki`` wrote, and where the files it replaced went (if any)."""

    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path
    parties: dict[int, PartyFiles]
    set_aside: Path | None = None
    clients: dict[str, tuple[Path, Path]] = field(default_factory=dict)
    """Certificate and key of each scoring client (``vfl score``), by name."""


def create_test_pki(
    directory: Path,
    *,
    parties: Sequence[int],
    server_names: Sequence[str] = DEFAULT_SERVER_NAMES,
    days: int = 30,
    force: bool = False,
    clients: Sequence[str] = (),
) -> PkiFiles:
    """Write a CA, a server certificate for ``server_names``, and a certificate and token per party.

    Args:
        directory: Where the files go (created if missing).
        parties: The party ids.
        server_names: DNS names and IP addresses the parties dial the server by.
        days: Validity of every certificate.
        clients: Names of callers of the online scoring API (``vfl serve``): each gets a client
            certificate naming ``client-<name>``, in ``client-<name>.pem`` and ``.key``.
        force: Replace files of an earlier call, after moving them to
            ``directory/replaced-<UTC time>/`` (keys are never deleted).

    Raises:
        ConfigError: on an empty or invalid name list, a party id below 1, ``days`` outside
            ``1..MAX_DAYS``, or (without ``force``) a directory that already holds any of the
            files; all before anything in ``directory`` changes.
    """
    _check_request(directory, parties, server_names, days)
    _check_clients(clients)
    made = _make_all(parties, server_names, days, clients)  # every name checked, nothing written
    planned = [directory / name for name in made.files]
    set_aside = _make_room(directory, planned, force=force)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        return _write_all(directory, made, set_aside)
    except OSError as error:
        if set_aside is None:
            raise
        raise ConfigError(
            f"{failure_line(error)}; the files it was to replace are kept in {set_aside}"
        ) from error


@dataclass
class _Made:
    """Every key, certificate and token of a PKI, made in memory before anything is written."""

    ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey]
    server: tuple[x509.Certificate, ec.EllipticCurvePrivateKey]
    parties: dict[int, tuple[x509.Certificate, ec.EllipticCurvePrivateKey, str]]
    clients: dict[str, tuple[x509.Certificate, ec.EllipticCurvePrivateKey]]

    @property
    def files(self) -> list[str]:
        """The names of every file it is written to."""
        names = ["ca.pem", "ca.key", "server.pem", "server.key"]
        for party in self.parties:
            names += [f"{party_name(party)}{suffix}" for suffix in (".pem", ".key", ".token")]
        for client in self.clients:
            names += [f"{client_name(client)}{suffix}" for suffix in (".pem", ".key")]
        return names


def _make_all(
    parties: Sequence[int], server_names: Sequence[str], days: int, clients: Sequence[str]
) -> _Made:
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = certificate(CA_NAME, ca_key, ca_key, CA_NAME, days, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = certificate(
        server_names[0], server_key, ca_key, CA_NAME, days, names=server_names, server=True
    )
    made = _Made((ca_cert, ca_key), (server_cert, server_key), {}, {})
    for party in parties:
        name = party_name(party)
        key = ec.generate_private_key(ec.SECP256R1())
        cert = certificate(name, key, ca_key, CA_NAME, days, names=[name])
        made.parties[party] = (cert, key, secrets.token_urlsafe(32))
    for client in clients:
        name = client_name(client)
        key = ec.generate_private_key(ec.SECP256R1())
        made.clients[client] = (certificate(name, key, ca_key, CA_NAME, days, names=[name]), key)
    return made


def _write_all(directory: Path, made: _Made, set_aside: Path | None) -> PkiFiles:
    files = PkiFiles(
        ca_cert=_write_cert(directory / "ca.pem", made.ca[0]),
        ca_key=_write_key(directory / "ca.key", made.ca[1]),
        server_cert=_write_cert(directory / "server.pem", made.server[0]),
        server_key=_write_key(directory / "server.key", made.server[1]),
        parties={},
        set_aside=set_aside,
    )
    for party, (cert, key, token) in made.parties.items():
        name = party_name(party)
        token_path = directory / f"{name}.token"
        _write_private(token_path, (token + "\n").encode())
        files.parties[party] = PartyFiles(
            cert=_write_cert(directory / f"{name}.pem", cert),
            key=_write_key(directory / f"{name}.key", key),
            token=token_path,
            token_sha256=token_digest(token),
        )
    for client, (cert, key) in made.clients.items():
        name = client_name(client)
        files.clients[client] = (
            _write_cert(directory / f"{name}.pem", cert),
            _write_key(directory / f"{name}.key", key),
        )
    return files


def client_name(client: str) -> str:
    """The name a scoring client's certificate carries: ``client-<name>``."""
    return f"{CLIENT_PREFIX}{client}"


def _check_clients(clients: Sequence[str]) -> None:
    for client in clients:
        if not client or not all(c.isascii() and (c.isalnum() or c in "-_.") for c in client):
            raise ConfigError(
                f"invalid client name {client!r}: use ASCII letters, digits, '-', '_' and '.'"
            )


def _check_request(
    directory: Path, parties: Sequence[int], server_names: Sequence[str], days: int
) -> None:
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"--out {str(directory)!r} is a file; name a folder for the files")
    if not server_names:
        raise ConfigError("the server certificate needs at least one name (--server-name)")
    if any(party < 1 for party in parties) or len(set(parties)) != len(parties):
        raise ConfigError(f"party ids must be distinct integers >= 1, got {list(parties)}")
    if not 1 <= days <= MAX_DAYS:
        raise ConfigError(
            f"--days must lie in 1..{MAX_DAYS} (a test certificate valid up to 100 years), got"
            f" {days}"
        )
    for name in server_names:
        general_name(name)


def _make_room(directory: Path, planned: Sequence[Path], *, force: bool) -> Path | None:
    """Refuse to overwrite, or (``force``) move existing files aside; where they went."""
    existing = [path for path in planned if path.exists()]
    if not existing:
        return None
    names = ", ".join(path.name for path in existing)
    if not force:
        raise ConfigError(
            f"{str(directory)!r} already holds {names}; writing a new CA would replace them."
            " Choose another --out, or give --force to move them to a replaced-<time> folder"
            " first"
        )
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    aside = directory / f"replaced-{stamp}"
    suffix = 1
    while aside.exists():
        suffix += 1
        aside = directory / f"replaced-{stamp}-{suffix}"
    aside.mkdir(mode=0o700)
    for path in existing:
        os.replace(path, aside / path.name)
    return aside


def _write_cert(path: Path, cert: x509.Certificate) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> Path:
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    _write_private(path, pem)
    return path


def _write_private(path: Path, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
    os.chmod(path, 0o600)
