"""``vfl server --predict`` for a SecureBoost model: the label holder walks its trees over gRPC.

The server loads its bundle (``RUN_DIR/bundle/server/``, ``vfl.run.tree_bundles``: trees, leaf
weights, owners and record numbers, never a passive threshold), listens as in training and
admits only parties whose bundles come from the same run. It aligns its new IDs with every
party's new table by the deployment's PSI, has each party keep its aligned rows
(``ModelSetupRequest``), and walks all trees a depth at a time, asking each owner once per depth
which of the rows go left at its records (``max_depth`` round trips for the whole batch). Only
the server sees predictions; IDs not every party holds are listed in ``<out>-unscored.csv`` with
the reason.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch

from vfl.boost.link import TransportLink
from vfl.boost.tree import SplitTable
from vfl.config import RunConfig
from vfl.deploy.alignment import align
from vfl.deploy.boost_model_party import ROWS_TABLE
from vfl.deploy.boost_server import frame_limit
from vfl.deploy.config import DeploymentConfig
from vfl.deploy.control import ask
from vfl.deploy.messages import ModelSetupRequest, SetupReply
from vfl.deploy.predicting import check_outputs, read_new_ids, write_outputs
from vfl.deploy.server import listen
from vfl.deploy.tls import server_tls
from vfl.errors import DataError
from vfl.results.metrics import Task, evaluate_logits
from vfl.run import tree_bundles
from vfl.run.bundles import BUNDLE, SERVER
from vfl.run.predict import Predictions, probabilities
from vfl.run.tree_bundles import LabelHolderBundle
from vfl.run.tree_predict import tree_margins
from vfl.transport.grpc_transport import GrpcTransport
from vfl.wire import SPLIT_TEST, Shutdown

log = logging.getLogger(__name__)


def load_label_holder(model_dir: Path) -> LabelHolderBundle:
    """The label holder's SecureBoost bundle of the trained run ``model_dir``.

    Raises:
        DataError: naming a missing or corrupt bundle file, or a model whose label holder
            splits on columns of its own (a deployment's server holds none).
    """
    bundle = tree_bundles.load_label_holder(Path(model_dir) / BUNDLE / SERVER)
    if bundle.party in bundle.holders:
        raise DataError(
            f"{model_dir} was trained with the label holder as party {bundle.party}, holding"
            " columns of its own; a deployment's server holds none: predict it with"
            f" `vfl predict {model_dir}`"
        )
    return bundle


def set_up_holders(
    transport: GrpcTransport, bundle: LabelHolderBundle, alignment: str = ""
) -> dict[int, SetupReply]:
    """Every connected party takes its rows to score (the aligned ones, for a batch)."""
    request = ModelSetupRequest(
        round=0,
        fingerprint=bundle.fingerprint,
        alignment=alignment,
        num_classes=len(bundle.classes),
        widths=torch.zeros(len(transport.party_ids), dtype=torch.int64),
    )
    transport.unpin()
    replies = ask(transport, dict.fromkeys(transport.party_ids, request), SetupReply)
    transport.pin({party: transport.answered_by(party) for party in replies})
    return replies


def margin_logits(bundle: LabelHolderBundle, link: TransportLink, rows: int) -> torch.Tensor:
    """``(rows, 1)`` float64 logits (the trees' margins) of the rows the parties keep."""
    margins = tree_margins(bundle, link, ROWS_TABLE, SplitTable(), np.zeros((rows, 0)))
    return torch.from_numpy(margins).unsqueeze(1)


def predict_boost_deployed(
    config: RunConfig,
    deployment: DeploymentConfig,
    model_dir: Path,
    data: Path,
    *,
    out: Path,
    force: bool = False,
    port_file: Path | None = None,
) -> Predictions:
    """Predict for the IDs of ``data`` with a SecureBoost model; write ``out``.

    Raises:
        ConfigError: if ``out`` exists (without ``force``) or a TLS file is bad.
        DataError: naming a bad bundle, ID file, or a party whose rows do not fit.
        ProtocolError: if parties fail or do not connect in time, naming them.
    """
    tls = server_tls(deployment.tls)
    bundle = load_label_holder(model_dir)
    unscored = check_outputs(out, force, data)
    new = read_new_ids(data, config, bundle.classes)
    transport = listen(deployment, tls, model=bundle.fingerprint)
    try:
        if port_file is not None:
            port_file.write_text(f"{transport.port}\n")
        transport.wait_for_parties(deployment.connect_timeout_s)
        rows, logits = _predict(transport, bundle, new.ids, deployment)
    finally:
        transport.close()
    order = np.argsort(rows, kind="stable")  # back to the file's order
    task = Task(len(bundle.classes))
    metrics = None
    if new.labels is not None:
        metrics = evaluate_logits(task, logits, new.labels[torch.from_numpy(rows)])
    predictions = Predictions(
        new.ids[rows][order], bundle.classes, probabilities(task, logits)[order], metrics
    )
    write_outputs(predictions, np.delete(new.ids, rows), out, unscored)
    return predictions


def _predict(
    transport: GrpcTransport,
    bundle: LabelHolderBundle,
    ids: npt.NDArray[np.generic],
    deployment: DeploymentConfig,
) -> tuple[npt.NDArray[np.int64], torch.Tensor]:
    """Align, set the parties up, walk the trees (then shut the parties down)."""
    alignment = align(transport, {SPLIT_TEST: ids})
    rows = alignment.rows[SPLIT_TEST]
    for party, reply in set_up_holders(transport, bundle, alignment.id).items():
        if reply.num_test != len(rows):
            raise DataError(
                f"party {party} aligned {reply.num_test} rows but the server {len(rows)}"
            )
    link = TransportLink(transport, max_frame_bytes=frame_limit(deployment.max_message_mib << 20))
    logits = margin_logits(bundle, link, len(rows))
    transport.request({p: Shutdown(round=0) for p in transport.party_ids}, phase="setup")
    log.info("predicted %d of %d IDs", len(rows), len(ids))
    return rows, logits
