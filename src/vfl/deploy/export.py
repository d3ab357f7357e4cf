"""Deployed model bundles: at the end of training every role exports its own trained part.

The server computes the run's fingerprint from the config every role shares and the run's
alignment (whose id is fresh for every deployment and kept by a resumed one), sends it to every
party in an ``ExportRequest``, and writes its own bundle into ``RUN_DIR/bundle/server``. Each
party writes its bundle, with its own fitted encoding of its raw columns, into
``STATE_DIR/bundle/party-<id>`` (``vfl.deploy.party``). Nothing crosses the wire but the
fingerprint: every role's weights stay where they were trained.
"""

from __future__ import annotations

import logging
from pathlib import Path

from vfl.config import RunConfig
from vfl.deploy.control import ControlChannel, ask
from vfl.deploy.messages import ControlAck, ExportRequest
from vfl.errors import ConfigError
from vfl.protocol.base import Trainer
from vfl.protocol.loop import ServerLoop
from vfl.run import bundles

log = logging.getLogger(__name__)


def deployed_fingerprint(config: RunConfig, alignment_id: str) -> str:
    """The fingerprint of a deployed run: its shared config and its alignment."""
    return bundles.fingerprint(config, f"deployment alignment {alignment_id}")


def export_deployed(
    trainer: Trainer,
    channel: ControlChannel,
    config: RunConfig,
    *,
    alignment_id: str,
    folder: Path,
    classes: tuple[str, ...],
) -> str:
    """Have every party export its bundle, then write the server's into ``folder``.

    Returns:
        The run's fingerprint.

    Raises:
        ProtocolError: naming a party that failed to export.
    """
    if not isinstance(trainer, ServerLoop):
        raise ConfigError("a deployment trains with a protocol loop; there is nothing to export")
    fingerprint = deployed_fingerprint(config, alignment_id)
    request = ExportRequest(round=trainer.rounds, fingerprint=fingerprint)
    ask(channel, dict.fromkeys(channel.party_ids, request), ControlAck)
    target = bundles.export_server(
        folder, trainer.server, config, run_fingerprint=fingerprint, classes=classes
    )
    log.info("exported the model bundles (fingerprint %s); the server's in %s", fingerprint, target)
    return fingerprint
