"""One X.509 certificate of the test PKI: subject, issuer, validity, names and usage."""

from __future__ import annotations

import datetime
import ipaddress
import re
from collections.abc import Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from vfl.errors import ConfigError

MAX_NAME = 253
"""The longest DNS name."""
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_DNS_NAME = re.compile(rf"(?:\*\.)?{_LABEL}(?:\.{_LABEL})*\.?")


def certificate(
    common_name: str,
    key: ec.EllipticCurvePrivateKey,
    issuer_key: ec.EllipticCurvePrivateKey,
    issuer_name: str,
    days: int,
    *,
    names: Sequence[str] = (),
    ca: bool = False,
    server: bool = False,
) -> x509.Certificate:
    """``common_name``'s certificate for ``key``, signed by the issuer's key for ``days`` days.

    ``names``: its subject alternative names (IP addresses or DNS names); ``ca``: a CA
    certificate; otherwise it authenticates a server (``server``) or a client.
    """
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer_name)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))  # tolerate clock skew
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if names:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([general_name(n) for n in names]), critical=False
        )
    if not ca:
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def general_name(name: str) -> x509.GeneralName:
    """A server name as an IP address or a DNS name.

    Raises:
        ConfigError: naming a name that is neither, and what would be valid.
    """
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        pass
    if name and not name.isascii():
        try:
            hint = f"; give its ASCII (IDNA) form {name.encode('idna').decode()!r}"
        except UnicodeError:
            hint = ""
        raise ConfigError(
            f"invalid server name {name!r}: a certificate's DNS name is ASCII letters, digits,"
            f" '-' and '.'{hint}"
        )
    if len(name) > MAX_NAME or not _DNS_NAME.fullmatch(name):
        raise ConfigError(
            f"invalid server name {name!r}: give an IP address or a DNS name (labels of ASCII"
            f" letters, digits and '-', 1 to 63 characters each, joined by '.', at most"
            f" {MAX_NAME} in all)"
        )
    return x509.DNSName(name)
