"""TLS files and tokens: every problem is named by its config key and file, before any dialing.

The last tests run ``vfl server`` and ``vfl party`` and check that a bad file stops them with
exit status 2 and its name, not as a failure to listen.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.deploy.scenario import make_scenario
from vfl.cli import main
from vfl.deploy.certs import CA_NAME, PkiFiles
from vfl.deploy.config import PartyTlsConfig, ServerTlsConfig
from vfl.deploy.tls import party_tls, read_token, server_tls
from vfl.errors import ConfigError


def write_certificate(
    pki: PkiFiles, path: Path, *, starts_in_days: float, ends_in_days: float
) -> Path:
    """A party-1 certificate signed by ``pki``'s CA, valid in the given window; its key beside."""
    ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "party-1")]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now + datetime.timedelta(days=starts_in_days))
        .not_valid_after(now + datetime.timedelta(days=ends_in_days))
        .sign(ca_key, hashes.SHA256())
    )
    path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    path.with_suffix(".key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def server_files(pki: PkiFiles, **changes: str) -> ServerTlsConfig:
    files = {"cert": str(pki.server_cert), "key": str(pki.server_key), "ca": str(pki.ca_cert)}
    return ServerTlsConfig(**{**files, **changes}, mutual=True)


def party_files(pki: PkiFiles, **changes: str) -> PartyTlsConfig:
    files = {
        "ca": str(pki.ca_cert),
        "cert": str(pki.parties[1].cert),
        "key": str(pki.parties[1].key),
    }
    return PartyTlsConfig(**{**files, **changes})


def test_the_test_pki_files_load_for_the_server_and_a_party(pki: PkiFiles) -> None:
    # Execute
    server = server_tls(server_files(pki))
    party = party_tls(party_files(pki))

    # Assert: the control for every refusal below
    assert server.cert_chain == pki.server_cert.read_bytes() and server.mutual
    assert party.cert_file == str(pki.parties[1].cert) and party.ca_file == str(pki.ca_cert)


def test_a_missing_tls_file_is_named_with_its_key(pki: PkiFiles, tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere.key")
    with pytest.raises(ConfigError) as caught:
        server_tls(server_files(pki, key=missing))
    assert str(caught.value) == f"deployment.tls.key: no such file {missing!r}"


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("cert", "deployment.tls.cert: {path!r} is not a PEM certificate"),
        ("key", "deployment.tls.key: {path!r} is not an unencrypted PEM private key"),
        ("ca", "deployment.tls.ca: {path!r} is not a PEM certificate"),
    ],
)
def test_a_tls_file_that_does_not_parse_is_named_as_such(
    pki: PkiFiles, tmp_path: Path, field: str, expected: str
) -> None:
    # Prepare
    garbage = tmp_path / f"garbage.{field}"
    garbage.write_text("-----BEGIN SOMETHING-----\nnot base64 at all\n")

    # Execute / Assert
    with pytest.raises(ConfigError) as caught:
        server_tls(server_files(pki, **{field: str(garbage)}))
    assert str(caught.value).startswith(expected.format(path=str(garbage)))


def test_a_key_of_another_certificate_is_refused(pki: PkiFiles) -> None:
    with pytest.raises(ConfigError) as caught:
        party_tls(party_files(pki, key=str(pki.parties[2].key)))
    assert str(caught.value) == (
        f"tls.key: {str(pki.parties[2].key)!r} is not the private key of the certificate in"
        f" tls.cert ({str(pki.parties[1].cert)!r})"
    )


@pytest.mark.parametrize(
    ("window", "expected"),
    [((-10, -1), "expired on"), ((2, 30), "is valid only from")],
)
def test_a_certificate_outside_its_validity_period_is_refused_naming_the_file(
    pki: PkiFiles, tmp_path: Path, window: tuple[float, float], expected: str
) -> None:
    # Prepare
    cert = write_certificate(
        pki, tmp_path / "party-1.pem", starts_in_days=window[0], ends_in_days=window[1]
    )

    # Execute / Assert
    with pytest.raises(ConfigError) as caught:
        party_tls(party_files(pki, cert=str(cert), key=str(cert.with_suffix(".key"))))
    assert str(caught.value).startswith(f"tls.cert: the certificate in {str(cert)!r} {expected}")


def test_a_token_file_must_exist_and_hold_a_token(tmp_path: Path) -> None:
    empty = tmp_path / "party-1.token"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match="token_file: no such file"):
        read_token(str(tmp_path / "missing.token"))
    with pytest.raises(ConfigError, match="is empty; it must hold the party's token"):
        read_token(str(empty))
    empty.write_text(" secret \n")
    assert read_token(str(empty)) == "secret"


def test_vfl_server_names_an_unparsable_certificate_not_a_failure_to_listen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    scenario = make_scenario(tmp_path)
    scenario.pki.server_cert.write_text("this is not a certificate\n")

    # Execute
    status = main(["server", "--config", str(scenario.run_toml), "--run-dir", str(tmp_path / "r")])

    # Assert
    error = capsys.readouterr().err
    assert status == 2
    assert f"deployment.tls.cert: {str(scenario.pki.server_cert)!r} is not a PEM certificate" in (
        error
    )
    assert "cannot listen" not in error


def test_vfl_party_names_a_missing_key_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    scenario = make_scenario(tmp_path)
    scenario.pki.parties[1].key.unlink()

    # Execute
    status = main(["party", "--config", str(scenario.party_tomls[1])])

    # Assert
    assert status == 2
    assert f"tls.key: no such file {str(scenario.pki.parties[1].key)!r}" in capsys.readouterr().err
