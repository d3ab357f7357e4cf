"""``vfl server --predict``: the label holder predicts for new IDs with the parties' bundles.

The server loads its own bundle (``RUN_DIR/bundle/server``), reads the new IDs (and labels, if
the file has the label column), listens as in training and admits only parties whose bundles
come from the same run (``vfl.transport.security.Authenticator.check_model``). It aligns its new
IDs with every party's new table by the deployment's PSI, has each party build its role from
its bundle over the aligned rows (``ModelSetupRequest``), and builds its own role and protocol
loop with the composition root, as training did. The logits come from the loop's evaluation
path (``ServerLoop.logits``): with PBM, the same secure sum of fixed-point embeddings as
evaluation, so no noise is added and no privacy budget is spent; the server learns the exact
sum of the parties' embeddings of each row, as in evaluation. Only the server sees predictions.

IDs of the file that not every party holds cannot be predicted; they are listed with the reason
in a second file (``<out>-unscored.csv``), never dropped silently.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
import torch

from vfl.config import RunConfig
from vfl.data.table import read_table, sample_ids
from vfl.deploy.alignment import align
from vfl.deploy.config import DeploymentConfig
from vfl.deploy.control import ask
from vfl.deploy.messages import ModelSetupRequest, SetupReply
from vfl.deploy.server import listen
from vfl.deploy.tls import server_tls
from vfl.errors import DataError
from vfl.protocol.loop import ServerLoop
from vfl.results.files import check_output
from vfl.results.metrics import Task, evaluate_logits
from vfl.run import bundles
from vfl.run.compose import Blueprint, build_loop, build_server
from vfl.run.predict import BundleModels, Predictions, label_indices, probabilities
from vfl.run.stages import use_threads
from vfl.transport.grpc_transport import GrpcTransport
from vfl.wire import SPLIT_TEST

log = logging.getLogger(__name__)

UNSCORED_REASON = "not held by every party (private set intersection)"


@dataclass(frozen=True)
class NewIds:
    """The label holder's new rows: IDs and, when the file has them, labels (class indices)."""

    ids: npt.NDArray[np.generic]
    labels: torch.Tensor | None


def read_new_ids(path: Path, config: RunConfig, classes: tuple[str, ...]) -> NewIds:
    """The IDs of ``path`` (``data.id_column``) and its labels (``data.label``), if present.

    Raises:
        DataError: naming the file and the missing or repeated ID, or a label that is no class.
    """
    id_column, label = config.data.id_column, config.data.label
    frame = read_table(path, bad_numbers=config.data.bad_numbers, skip=(id_column, label))
    if id_column not in frame.columns:
        raise DataError(f"{path} has no ID column {id_column!r}; its columns: {list(frame)}")
    ids = sample_ids(frame, id_column, path)
    labels = None
    if label and label in frame.columns:
        where = f"{path}: label column {label!r}"
        labels = label_indices(frame[label].tolist(), classes, where)
    return NewIds(ids, labels)


def set_up_parties(
    transport: GrpcTransport, bundle: bundles.ServerBundle, alignment: str = ""
) -> dict[int, SetupReply]:
    """Have every connected party build its role from its bundle; pin their processes.

    Raises:
        DataError: naming a party whose embedding width does not fit the server's head.
        ProtocolError: naming a party that failed.
    """
    widths = torch.tensor([w for _, w in sorted(bundle.widths.items())], dtype=torch.int64)
    request = ModelSetupRequest(
        round=0,
        fingerprint=bundle.fingerprint,
        alignment=alignment,
        num_classes=len(bundle.classes),
        widths=widths,
    )
    transport.unpin()
    replies = ask(transport, dict.fromkeys(transport.party_ids, request), SetupReply)
    for party, reply in replies.items():
        if reply.width != bundle.widths[party]:
            raise DataError(
                f"party {party}'s bottom model gives embeddings of width {reply.width}; the"
                f" server's head expects {bundle.widths[party]}"
            )
    transport.pin({party: transport.answered_by(party) for party in replies})
    return replies


def model_loop(
    bundle: bundles.ServerBundle, transport: GrpcTransport, labels: torch.Tensor
) -> ServerLoop:
    """The server's role and protocol loop, built from its bundle as training built them."""
    blueprint = Blueprint(bundle.config, BundleModels(bundle.config, {}, bundle.head), True)
    server = build_server(
        blueprint,
        task=Task(len(bundle.classes)),
        train_labels=torch.zeros(len(labels), dtype=torch.int64),
        test_labels=labels,
        widths=bundle.widths,
    )
    return build_loop(blueprint, server, transport)


def predict_deployed(
    config: RunConfig,
    deployment: DeploymentConfig,
    model_dir: Path,
    data: Path,
    *,
    out: Path,
    force: bool = False,
    port_file: Path | None = None,
) -> Predictions:
    """Predict for the IDs of ``data`` with the parties of ``deployment``; write ``out``.

    Raises:
        ConfigError: if ``out`` exists (without ``force``) or a TLS file is bad.
        DataError: naming a bad bundle, ID file, or a party whose rows do not fit.
        ProtocolError: if parties fail or do not connect in time, naming them.
    """
    tls = server_tls(deployment.tls)
    bundle = bundles.load_server(Path(model_dir) / bundles.BUNDLE / bundles.SERVER)
    unscored = check_outputs(out, force, data)
    use_threads(config.train.threads)
    new = read_new_ids(data, config, bundle.classes)
    transport = listen(deployment, tls, model=bundle.fingerprint)
    try:
        if port_file is not None:
            port_file.write_text(f"{transport.port}\n")
        transport.wait_for_parties(deployment.connect_timeout_s)
        rows, logits = _predict(transport, bundle, new)
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
    transport: GrpcTransport, bundle: bundles.ServerBundle, new: NewIds
) -> tuple[npt.NDArray[np.int64], torch.Tensor]:
    """Align, set the parties up, and ask for the logits of the aligned rows (then shut down)."""
    alignment = align(transport, {SPLIT_TEST: new.ids})
    rows = alignment.rows[SPLIT_TEST]
    for party, reply in set_up_parties(transport, bundle, alignment.id).items():
        if reply.num_test != len(rows):
            raise DataError(
                f"party {party} aligned {reply.num_test} rows but the server {len(rows)}"
            )
    labels = torch.zeros(len(rows), dtype=torch.int64)
    loop = model_loop(bundle, transport, labels)
    loop.setup()
    logits = loop.logits(SPLIT_TEST)
    loop.close()  # tells the parties the prediction is over
    log.info("predicted %d of %d IDs", len(rows), len(new.ids))
    return rows, logits


def check_outputs(out: Path, force: bool, data: Path | None = None) -> Path:
    """The file of unscored IDs beside ``out``, once neither would replace what it must not.

    Neither may replace a file without ``force``, nor ever the new IDs ``data``.

    Raises:
        ConfigError: naming the file that exists, or ``out`` if it is ``data``.
    """
    unscored = out.with_name(f"{out.stem}-unscored.csv")
    inputs = () if data is None else (Path(data),)
    for path in (out, unscored):
        check_output(path, force=force, inputs=inputs)
    return unscored


def write_outputs(
    predictions: Predictions, unscored_ids: npt.NDArray[np.generic], out: Path, unscored: Path
) -> None:
    """Write the predictions, and the IDs that could not be scored with the reason (if any)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    predictions.to_frame().to_csv(out, index=False)
    unscored.unlink(missing_ok=True)
    if len(unscored_ids):
        frame = pd.DataFrame({"id": unscored_ids, "reason": UNSCORED_REASON})
        frame.to_csv(unscored, index=False)
