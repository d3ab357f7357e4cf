"""Party authentication decisions and the test PKI."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from vfl.deploy.certs import PkiFiles, create_test_pki
from vfl.errors import ConfigError
from vfl.transport.security import (
    METADATA_INSTANCE,
    METADATA_PARTY,
    METADATA_TOKEN,
    Authenticator,
    PartyCredential,
    RefusedError,
    token_digest,
)

GOOD = token_digest("good-token")


def metadata(party: str = "1", token: str = "good-token", instance: str = "abc") -> dict[str, str]:
    return {METADATA_PARTY: party, METADATA_TOKEN: token, METADATA_INSTANCE: instance}


def test_a_party_with_its_token_and_certificate_is_admitted() -> None:
    # Prepare
    auth = Authenticator({1: PartyCredential(GOOD)}, mutual=True)

    # Execute
    party, instance = auth.check(metadata(), ["party-1"])

    # Assert
    assert (party, instance) == (1, "abc")


@pytest.mark.parametrize(
    ("meta", "names", "reason", "code"),
    [
        (metadata(party="x"), ["party-1"], "no valid party id", "unauthenticated"),
        (metadata(party="4"), ["party-4"], "party 4 is not in this run", "permission_denied"),
        (metadata(token="bad"), ["party-1"], "wrong token", "unauthenticated"),
        (metadata(), ["party-2"], "names \\['party-2'\\], not 'party-1'", "unauthenticated"),
        (metadata(), [], "names \\[\\]", "unauthenticated"),
        (metadata(instance=""), ["party-1"], "no process instance", "unauthenticated"),
    ],
)
def test_a_party_without_valid_credentials_is_refused_with_the_reason(
    meta: dict[str, str], names: list[str], reason: str, code: str
) -> None:
    # Prepare
    auth = Authenticator({1: PartyCredential(GOOD), 2: PartyCredential(GOOD)}, mutual=True)

    # Execute / Assert
    with pytest.raises(RefusedError, match=reason) as caught:
        auth.check(meta, names)
    assert caught.value.code == code


def test_a_refusal_of_an_unknown_party_names_no_party_of_the_run() -> None:
    # Prepare: a run of parties 17 and 23; a caller claims to be party 4
    auth = Authenticator({17: PartyCredential(GOOD), 23: PartyCredential(GOOD)}, mutual=False)

    # Execute
    with pytest.raises(RefusedError) as caught:
        auth.check(metadata(party="4"), [])

    # Assert: the caller hears that it is refused (negative control), never who is in the run
    message = str(caught.value)
    assert "party 4 is not in this run" in message
    assert "17" not in message and "23" not in message
    assert caught.value.code == "permission_denied"


def test_without_mutual_tls_every_party_needs_a_token() -> None:
    with pytest.raises(ConfigError, match="party 2 has no credential"):
        Authenticator({1: PartyCredential(GOOD), 2: PartyCredential()}, mutual=False)
    with pytest.raises(ConfigError, match="64 lowercase hex digits"):
        PartyCredential("abc")


def test_the_test_pki_names_parties_in_their_certificates(tmp_path: Path) -> None:
    # Execute
    pki: PkiFiles = create_test_pki(
        tmp_path, parties=[1, 2], server_names=["vfl.example", "10.0.0.1"]
    )

    # Assert
    server = x509.load_pem_x509_certificate(pki.server_cert.read_bytes())
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["vfl.example"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["10.0.0.1"]
    party = x509.load_pem_x509_certificate(pki.parties[2].cert.read_bytes())
    assert party.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "party-2"
    usage = party.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    token = pki.parties[2].token.read_text().strip()
    assert token_digest(token) == pki.parties[2].token_sha256
    for secret in (pki.ca_key, pki.server_key, pki.parties[1].key, pki.parties[1].token):
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_invalid_pki_requests_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="distinct integers >= 1"):
        create_test_pki(tmp_path, parties=[0])
    with pytest.raises(ConfigError, match="invalid server name"):
        create_test_pki(tmp_path, parties=[1], server_names=["bad name"])
