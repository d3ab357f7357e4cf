"""The HTTP scoring endpoint's mutual TLS and request checks, on a real uvicorn server.

The endpoint runs as ``vfl serve --http-port`` runs it (``start_http``, Starlette on uvicorn in
a thread, the deployment's CA), before any model is set up: a caller that passes every check
gets 503 ("starting"). Scoring itself is tested against a running service in
``test_score_clients.py`` (slow).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from vfl.deploy.certs import PkiFiles, create_test_pki
from vfl.deploy.config import ServerTlsConfig
from vfl.deploy.score_http import PATH, HttpScoring, start_http
from vfl.errors import ConfigError


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PkiFiles:
    return create_test_pki(tmp_path_factory.mktemp("pki"), parties=[1], clients=["tester"])


@pytest.fixture(scope="module")
def endpoint(pki: PkiFiles) -> Iterator[HttpScoring]:
    tls = ServerTlsConfig(
        cert=str(pki.server_cert), key=str(pki.server_key), ca=str(pki.ca_cert), mutual=True
    )
    running = start_http([], ["no", "yes"], tls, host="127.0.0.1", port=0)
    yield running
    running.stop()


def client(pki: PkiFiles, cert: tuple[Path, Path] | None) -> httpx.Client:
    context = ssl.create_default_context(cafile=str(pki.ca_cert))
    if cert is not None:
        context.load_cert_chain(str(cert[0]), str(cert[1]))
    return httpx.Client(verify=context, timeout=10)


def url(endpoint: HttpScoring) -> str:
    return f"https://127.0.0.1:{endpoint.port}{PATH}"


def test_a_client_certificate_passes_to_the_scorer(pki: PkiFiles, endpoint: HttpScoring) -> None:
    # Execute
    with client(pki, pki.clients["tester"]) as http:
        reply = http.post(url(endpoint), json={"ids": ["1", 2]})

    # Assert: every check passed; no model is set up yet
    assert reply.status_code == 503
    assert reply.json() == {"error": "the service is starting; ask again"}


def test_a_client_without_a_certificate_is_refused(pki: PkiFiles, endpoint: HttpScoring) -> None:
    with client(pki, None) as http, pytest.raises(httpx.HTTPError):
        http.post(url(endpoint), json={"ids": ["1"]})


def test_a_party_certificate_is_answered_403(pki: PkiFiles, endpoint: HttpScoring) -> None:
    # Prepare: signed by the same CA, but a party's (parties never see predictions)
    party = pki.parties[1]

    # Execute
    with client(pki, (party.cert, party.key)) as http:
        reply = http.post(url(endpoint), json={"ids": ["1"]})

    # Assert
    assert reply.status_code == 403
    assert reply.json()["error"] == (
        "scoring needs a client certificate naming client-<name>; this one names ['party-1']"
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"not json", "the request is not UTF-8 JSON"),
        (b'{"ids": []}', '"ids" must be a list of 1 to'),
        (b'{"ids": [1.5]}', '"ids"[0] is 1.5; an ID is a string or an integer'),
        (b'{"id": ["1"]}', 'the request must be a JSON object with the one key "ids"'),
    ],
)
def test_a_malformed_request_is_answered_400_saying_what_is_wrong(
    pki: PkiFiles, endpoint: HttpScoring, body: bytes, expected: str
) -> None:
    with client(pki, pki.clients["tester"]) as http:
        reply = http.post(url(endpoint), content=body)
    assert reply.status_code == 400
    assert expected in reply.json()["error"]


def test_only_post_is_served(pki: PkiFiles, endpoint: HttpScoring) -> None:
    with client(pki, pki.clients["tester"]) as http:
        assert http.get(url(endpoint)).status_code == 405


def test_the_endpoint_needs_mutual_tls(pki: PkiFiles) -> None:
    one_way = ServerTlsConfig(cert=str(pki.server_cert), key=str(pki.server_key))
    with pytest.raises(ConfigError, match="needs mutual TLS"):
        start_http([], ["no", "yes"], one_way, host="127.0.0.1", port=0)


def test_a_port_in_use_is_refused_naming_it(pki: PkiFiles, endpoint: HttpScoring) -> None:
    tls = ServerTlsConfig(
        cert=str(pki.server_cert), key=str(pki.server_key), ca=str(pki.ca_cert), mutual=True
    )
    with pytest.raises(ConfigError, match=f"--http-port {endpoint.port}: cannot listen"):
        start_http([], ["no", "yes"], tls, host="127.0.0.1", port=endpoint.port)
