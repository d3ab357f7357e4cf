"""``vfl serve``: the label holder's long-running online scoring service.

It listens where the deployment says, with the deployment's TLS (mutual TLS is required: the
scoring API's callers are authenticated by their certificates) and the parties' tokens. Parties
started with ``vfl party --serve`` connect with bundles of the same run (a bundle of another run
is refused at connect) and keep their streams open; the scoring API is served on the same port
(``vfl.deploy.score_api``), and with ``--http-port`` over HTTP/JSON on a port of its own
(``vfl.deploy.score_http``). The service runs until it receives SIGTERM or SIGINT, then tells
the parties it is done.
"""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from vfl.config import RunConfig
from vfl.deploy.boost_predicting import load_label_holder
from vfl.deploy.boost_run import is_boost
from vfl.deploy.boost_scoring import BoostModel
from vfl.deploy.boost_server import frame_limit
from vfl.deploy.config import DeploymentConfig
from vfl.deploy.score_api import scoring_service
from vfl.deploy.scoring import NeuralModel, Scorer, ScoringModel
from vfl.deploy.server import listen
from vfl.deploy.tls import server_tls
from vfl.errors import ConfigError
from vfl.run import bundles
from vfl.run.stages import use_threads
from vfl.transport.address import split_address
from vfl.transport.link import PartyUnavailableError
from vfl.transport.retry import RetryPolicy

if TYPE_CHECKING:
    from vfl.deploy.score_http import HttpScoring

log = logging.getLogger(__name__)

API_WORKERS = 16
"""Threads answering scoring calls (their requests wait together for one round trip)."""


def serve(
    config: RunConfig,
    deployment: DeploymentConfig,
    model_dir: Path,
    *,
    port_file: Path | None = None,
    wait_s: float = 5.0,
    stop: threading.Event | None = None,
    http_port: int | None = None,
    http_port_file: Path | None = None,
) -> None:
    """Serve scoring requests with the model ``model_dir`` exported until ``stop`` is set.

    Args:
        config: The run config of the deployment (RUN.toml).
        deployment: Its deployment section.
        model_dir: The trained run's directory (``bundle/server`` inside).
        port_file: Where to write the listening port.
        wait_s: How long a request waits for a party that is not connected.
        stop: Ends the service when set (default: SIGTERM or SIGINT).
        http_port: Also serve the scoring API over HTTP/JSON on this port of the listening host
            (0: a free port; ``vfl.deploy.score_http``).
        http_port_file: Where to write the HTTP port.

    Raises:
        ConfigError: if the TLS is not mutual or a file is bad.
        DataError: naming a bad bundle file.
    """
    tls = server_tls(deployment.tls)
    if not tls.mutual:
        raise ConfigError(
            "vfl serve needs mutual TLS (deployment.tls.mutual = true): its callers are"
            " authenticated by client certificates (vfl certs --clients NAME)"
        )
    model, fingerprint = _model(config, deployment, Path(model_dir))
    use_threads(config.train.threads)
    stop = stop if stop is not None else _signalled()
    policy = RetryPolicy(
        attempts=1, timeout_s=deployment.request_timeout_s, reconnect_s=wait_s, backoff_s=0.0
    )
    scorers: list[Scorer] = []
    transport = listen(
        deployment,
        tls,
        model=fingerprint,
        policy=policy,
        control_timeout_s=deployment.request_timeout_s,
        services=[scoring_service(scorers, model.classes)],
        service_workers=API_WORKERS,
    )
    scorer = Scorer(transport, model, wait_s=wait_s)
    scorers.append(scorer)
    http = None
    try:
        if http_port is not None:
            http = _start_http(scorers, model.classes, deployment, http_port, http_port_file)
        if port_file is not None:
            port_file.write_text(f"{transport.port}\n")
        log.info("scoring with the model of %s on port %d", model_dir, transport.port)
        threading.Thread(
            target=_prepare_when_connected,
            args=(scorer, deployment.connect_timeout_s),
            name="vfl-prepare",
            daemon=True,
        ).start()
        stop.wait()
        log.info("stopping the scoring service")
    finally:
        if http is not None:
            http.stop()
        scorer.close()
        scorer.shut_down_parties()
        transport.close()


def _model(
    config: RunConfig, deployment: DeploymentConfig, model_dir: Path
) -> tuple[ScoringModel, str]:
    """The server's model to score with, and its run fingerprint."""
    if is_boost(config):
        bundle = load_label_holder(model_dir)
        limit = frame_limit(deployment.max_message_mib << 20)
        return BoostModel(bundle, limit), bundle.fingerprint
    neural = bundles.load_server(model_dir / bundles.BUNDLE / bundles.SERVER)
    return NeuralModel(neural), neural.fingerprint


def _start_http(
    scorers: list[Scorer],
    classes: tuple[str, ...],
    deployment: DeploymentConfig,
    port: int,
    port_file: Path | None,
) -> HttpScoring:
    from vfl.deploy.score_http import start_http  # Starlette and uvicorn only when asked for

    host, _ = split_address(deployment.listen, listen=True)
    http = start_http(scorers, classes, deployment.tls, host=host, port=port)
    if port_file is not None:
        port_file.write_text(f"{http.port}\n")
    return http


def _prepare_when_connected(scorer: Scorer, timeout_s: float) -> None:
    """Set the parties up as soon as all are connected (else the first request does)."""
    try:
        scorer.transport.wait_for_parties(timeout_s)
    except PartyUnavailableError as error:
        log.warning("%s; the first request will wait for them", error)
        return
    scorer.prepare()


def _signalled() -> threading.Event:
    """An event set by SIGTERM or SIGINT."""
    event = threading.Event()

    def handle(signum: int, frame: FrameType | None) -> None:
        event.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
    return event
