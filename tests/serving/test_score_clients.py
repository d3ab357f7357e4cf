"""The scoring API's clients as a user runs them: ``vfl score`` (its exit status) and HTTP/JSON.

One ``vfl serve --http-port 0`` with three Adult parties (real processes, mutual TLS) answers
every test; calls go through ``vfl score`` as a process and through httpx with a client
certificate, and are compared with the gRPC method's answers.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pandas as pd
import pytest

from tests.serving.registry_runs import ROOT, Deployed, deployment_of, trained_run
from tests.serving.service import Service, start_service
from vfl.cli import SOME_FAILED, main

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Deployed:
    root = tmp_path_factory.mktemp("score-clients")
    run_dir = trained_run("adult", root)
    assert main(["predict", str(run_dir), "--out", str(root / "batch.csv")]) == 0
    return deployment_of(run_dir, root / "deploy")


@pytest.fixture(scope="module")
def service(trained: Deployed) -> Iterator[Service]:
    http_port = trained.root / "http.port"
    running = start_service(trained, "--http-port", "0", "--http-port-file", str(http_port))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def url(service: Service, trained: Deployed) -> str:
    return f"https://127.0.0.1:{int((trained.root / 'http.port').read_text())}/v1/score"


@pytest.fixture
def ids(trained: Deployed) -> list[str]:
    frame = pd.read_csv(trained.root.parent / "batch.csv", dtype={"id": str})
    return list(frame["id"][:3])


def https(trained: Deployed, cert: tuple[Path, Path] | None) -> httpx.Client:
    """An HTTP client trusting the deployment's CA, presenting ``cert`` (or no certificate)."""
    context = ssl.create_default_context(cafile=str(trained.ca))
    if cert is not None:
        context.load_cert_chain(str(cert[0]), str(cert[1]))
    return httpx.Client(verify=context, timeout=30)


def vfl_score(trained: Deployed, service: Service, *ids: str) -> subprocess.CompletedProcess[str]:
    cert, key = trained.client
    command = [
        sys.executable, "-m", "vfl.cli", "score", service.address, *ids,
        "--ca", str(trained.ca), "--cert", str(cert), "--key", str(key),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def test_vfl_score_exits_0_when_every_id_is_scored(
    service: Service, trained: Deployed, ids: list[str]
) -> None:
    # Execute
    done = vfl_score(trained, service, *ids)

    # Assert
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert [entry["id"] for entry in answer["results"]] == ids
    assert all("predicted" in entry for entry in answer["results"])


def test_vfl_score_exits_4_naming_the_ids_that_were_not_scored(
    service: Service, trained: Deployed, ids: list[str]
) -> None:
    # Execute: one ID no party holds among scored ones
    done = vfl_score(trained, service, ids[0], "no-such-id", ids[1])

    # Assert: the whole answer on stdout, the failure on stderr, status 4
    assert done.returncode == SOME_FAILED == 4
    answer = json.loads(done.stdout)
    assert ["error" in entry for entry in answer["results"]] == [False, True, False]
    assert "1 of 3 IDs were not scored: no-such-id (party" in done.stderr


def test_http_answers_what_the_grpc_method_answers(
    service: Service, trained: Deployed, url: str, ids: list[str]
) -> None:
    # Execute
    with https(trained, trained.client) as client:
        reply = client.post(url, json={"ids": [*ids, "no-such-id"]})

    # Assert
    assert reply.status_code == 200
    assert reply.json() == service.score([*ids, "no-such-id"])
    assert "error" in reply.json()["results"][-1]


def test_http_refuses_a_client_without_a_certificate(
    service: Service, trained: Deployed, url: str, ids: list[str]
) -> None:
    # Execute / Assert: the TLS handshake fails without a client certificate
    with https(trained, None) as client, pytest.raises(httpx.HTTPError):
        client.post(url, json={"ids": ids})
    # Control: the same request with the client certificate is answered
    with https(trained, trained.client) as client:
        assert client.post(url, json={"ids": ids}).status_code == 200


def test_http_refuses_a_party_certificate(trained: Deployed, url: str, ids: list[str]) -> None:
    # Prepare: party 1's certificate, signed by the same CA (parties never see predictions)
    party = (trained.root / "certs" / "party-1.pem", trained.root / "certs" / "party-1.key")

    # Execute
    with https(trained, party) as client:
        reply = client.post(url, json={"ids": ids})

    # Assert
    assert reply.status_code == 403
    assert "client-<name>" in reply.json()["error"]


def test_http_answers_a_malformed_request_400_and_stays_up(
    trained: Deployed, url: str, ids: list[str]
) -> None:
    with https(trained, trained.client) as client:
        # Execute
        bad = client.post(url, content=b"not json")
        empty = client.post(url, json={"ids": []})
        good = client.post(url, json={"ids": ids})

    # Assert
    assert bad.status_code == 400 and "not UTF-8 JSON" in bad.json()["error"]
    assert empty.status_code == 400 and '"ids" must be a list' in empty.json()["error"]
    assert good.status_code == 200
