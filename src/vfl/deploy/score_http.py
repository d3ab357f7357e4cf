"""The scoring API over HTTP/JSON, beside the gRPC method: ``POST /v1/score`` on its own port.

``vfl serve --http-port PORT`` serves it with Starlette on uvicorn, in a thread of the service,
behind the same mutual TLS as the gRPC port: the caller's certificate must be signed by the
deployment's CA (``deployment.tls.ca``; a client without one has its connection closed) and name
``client-<name>`` (a party's certificate is answered 403). Request and answer are the gRPC
method's JSON::

    POST /v1/score   {"ids": ["10", "11"]}
    200              {"classes": [...], "results": [{"id": "10", "predicted": ..., ...}, ...]}
    400              {"error": "the request must be a JSON object with the one key ..."}
    403              {"error": "scoring needs a client certificate naming client-<name>; ..."}
    503              {"error": "the service is starting; ask again"}
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from uvicorn.protocols.http.h11_impl import H11Protocol

from vfl.deploy.certs import CLIENT_PREFIX
from vfl.deploy.config import ServerTlsConfig
from vfl.deploy.score_api import BadRequest, parse_request
from vfl.deploy.score_client import ERROR
from vfl.deploy.scoring import Scorer, as_json
from vfl.errors import ConfigError

log = logging.getLogger(__name__)

PATH = "/v1/score"
CLIENT_NAMES = "vfl.client_names"
"""The scope key under which each request carries the names of its caller's certificate."""
START_TIMEOUT_S = 30.0


def scoring_app(scorers: Sequence[Scorer], classes: Sequence[str]) -> Starlette:
    """The ASGI application answering ``POST /v1/score`` with ``scorers[0]``."""

    async def score(request: Request) -> JSONResponse:
        names: list[str] = request.scope.get(CLIENT_NAMES, [])
        if not any(name.startswith(CLIENT_PREFIX) for name in names):
            log.warning("refused an HTTP scoring call (certificate names %s)", names)
            message = (
                f"scoring needs a client certificate naming {CLIENT_PREFIX}<name>; this one"
                f" names {names}"
            )
            return JSONResponse({ERROR: message}, status_code=403)
        try:
            ids = parse_request(await request.body())
        except BadRequest as error:
            return JSONResponse({ERROR: str(error)}, status_code=400)
        if not scorers:
            return JSONResponse({ERROR: "the service is starting; ask again"}, status_code=503)
        results = await run_in_threadpool(scorers[0].score, ids)
        return JSONResponse(as_json(results, classes))

    return Starlette(routes=[Route(PATH, score, methods=["POST"])])


class _CertifiedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, handing each request the names of the peer's certificate."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        names = _certificate_names(transport.get_extra_info("ssl_object"))
        app = self.app

        async def with_names(scope: Any, receive: Any, send: Any) -> None:
            await app({**scope, CLIENT_NAMES: names}, receive, send)

        self.app = with_names


def _certificate_names(ssl_object: ssl.SSLObject | None) -> list[str]:
    """The common names and DNS names of the verified peer certificate."""
    certificate: dict[str, Any] = dict(ssl_object.getpeercert() or {}) if ssl_object else {}
    names = [
        str(entry[1])
        for attributes in certificate.get("subject", ())
        for entry in attributes
        if entry[0] == "commonName"
    ]
    names += [str(entry[1]) for entry in certificate.get("subjectAltName", ()) if entry[0] == "DNS"]
    return list(dict.fromkeys(names))


@dataclass
class HttpScoring:
    """The running HTTP endpoint: its port, and ``stop`` to end it."""

    server: uvicorn.Server
    thread: threading.Thread
    port: int

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_http(
    scorers: Sequence[Scorer],
    classes: Sequence[str],
    tls: ServerTlsConfig,
    *,
    host: str,
    port: int,
) -> HttpScoring:
    """Serve ``POST /v1/score`` on ``host:port`` (0: a free port) in a thread, with mutual TLS.

    Raises:
        ConfigError: if the TLS is not mutual, or the port cannot be bound.
    """
    if not tls.mutual or not tls.ca:
        raise ConfigError(
            "the HTTP scoring endpoint needs mutual TLS: deployment.tls.mutual and .ca"
        )
    listener = _bound(host, port)
    config = uvicorn.Config(
        scoring_app(scorers, classes),
        http=_CertifiedH11,
        ssl_certfile=tls.cert,
        ssl_keyfile=tls.key,
        ssl_ca_certs=tls.ca,
        ssl_cert_reqs=ssl.CERT_REQUIRED,
        log_config=None,
        access_log=False,
        lifespan="off",
    )
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)  # not its start-up notices
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [listener]}, name="vfl-http", daemon=True
    )
    thread.start()
    _wait_started(server, thread)
    bound = int(listener.getsockname()[1])
    log.info("HTTP scoring on %s:%d%s", host, bound, PATH)
    return HttpScoring(server, thread, bound)


def _bound(host: str, port: int) -> socket.socket:
    plain = host.strip("[]")
    family = socket.AF_INET6 if ":" in plain else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((plain, port))
    except OSError as error:
        listener.close()
        raise ConfigError(f"--http-port {port}: cannot listen on {host}:{port} ({error})") from None
    return listener


def _wait_started(server: uvicorn.Server, thread: threading.Thread) -> None:
    """Return once uvicorn serves; raise if its thread ends first or it takes too long."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise ConfigError("the HTTP scoring endpoint did not start (see the log above)")
        time.sleep(0.01)
