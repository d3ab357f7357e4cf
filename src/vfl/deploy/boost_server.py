"""The label holder's SecureBoost in a deployment: after the PSI, grow the trees over gRPC.

``vfl server`` with ``protocol.name = "secureboost"`` aligns the IDs as for a neural run, then
asks every party to become a passive holder of its aligned columns (``BoostSetupRequest``) and
drives ``ActiveBooster`` through a ``TransportLink`` over the run's gRPC transport (mutual TLS):
the same wire frames as ``train_secureboost`` in one process, counted in the same ledger, with
requests over the frame limit sent in pieces. The server holds the labels only (its party id is
0, the sender id of every server frame). After each tree it evaluates the model on the aligned
test rows (the parties route them, ``max_depth`` round trips) and reports the tree's metrics,
bytes and seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from vfl.boost.active import ActiveBooster
from vfl.boost.driver import grow_counted
from vfl.boost.link import PREDICT_PHASE, SETUP_PHASE, TRAIN_PHASE, TransportLink
from vfl.boost.paillier import DEFAULT_KEY_BITS, KeyPair
from vfl.boost.params import BoostParams
from vfl.boost.timing import TreeReport
from vfl.boost.tree import SplitTable
from vfl.config import RunConfig
from vfl.config.io import to_toml
from vfl.deploy.alignment import Alignment
from vfl.deploy.boost_party import TEST_TABLE
from vfl.deploy.config import party_view
from vfl.deploy.control import ask
from vfl.deploy.data import LabelTables
from vfl.deploy.messages import BoostSetupRequest, SetupReply
from vfl.errors import ConfigError, DataError
from vfl.results.metrics import Task, evaluate_logits
from vfl.run.boosting import describe_tree
from vfl.run.tree_checkpoint import TreeState
from vfl.transport.grpc_transport import GrpcTransport
from vfl.wire import SPLIT_TEST, SPLIT_TRAIN
from vfl.wire.frames import DEFAULT_MAX_BYTES
from vfl.wire.schema import SERVER_ID

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class BoostPlan:
    """What a deployed SecureBoost run grows, and how the label holder encrypts.

    Attributes:
        params: The trees' hyper-parameters.
        key_bits: The Paillier modulus size (2048 or more).
        workers: Encryption processes (``None``: every core).
    """

    params: BoostParams
    key_bits: int = DEFAULT_KEY_BITS
    workers: int | None = None


@dataclass
class DeployedBoost:
    """A deployed run's label holder after training, and what each tree cost and scored.

    Attributes:
        active: The label holder's role (trees, leaf weights, its own split table).
        link: The way to the parties (still open).
        reports: One per tree grown (by this process: a resumed run's after its checkpoint).
        metrics: Per tree grown, the test metrics of the model up to that tree.
        test_margins: The final model's margins of the aligned test rows.
        final: The final model's test metrics.
    """

    active: ActiveBooster
    link: TransportLink
    reports: list[TreeReport] = field(default_factory=list)
    metrics: list[dict[str, float]] = field(default_factory=list)
    test_margins: Floats = field(default_factory=lambda: np.zeros(0))
    final: dict[str, float] = field(default_factory=dict)

    def tree_records(self) -> list[dict[str, Any]]:
        """``summary.json``'s ``trees``: each tree's cost and the metrics after it."""
        return [
            {**asdict(report), **{f"test_{k}": v for k, v in scores.items()}}
            for report, scores in zip(self.reports, self.metrics, strict=True)
        ]


def frame_limit(max_message_bytes: int) -> int:
    """The largest frame both ends accept: the server's limit, at most the parties' default."""
    return min(max_message_bytes, DEFAULT_MAX_BYTES)


def setup_holders(
    transport: GrpcTransport,
    alignment: Alignment,
    labels: LabelTables,
    max_bin: int,
    *,
    config: RunConfig,
    restore_trees: int = 0,
) -> dict[int, SetupReply]:
    """Every party becomes a passive holder of its aligned rows; their counts are checked.

    Each party is sent the run's config as a party sees it (for its bundle's ``config.toml``);
    ``restore_trees``: a resumed run's complete trees, whose split rules each party reloads.

    Raises:
        DataError: if a party aligned other row counts than the server.
    """
    config_text = to_toml(party_view(config))
    request = BoostSetupRequest(
        round=0,
        alignment=alignment.id,
        max_bin=max_bin,
        config=config_text,
        restore_trees=restore_trees,
    )
    replies = ask(transport, dict.fromkeys(transport.party_ids, request), SetupReply)
    expected = (len(alignment.rows[SPLIT_TRAIN]), len(alignment.rows[SPLIT_TEST]))
    for party, reply in replies.items():
        if (reply.num_train, reply.num_test) != expected:
            raise DataError(
                f"party {party} aligned {(reply.num_train, reply.num_test)} train/test rows but"
                f" the server {expected}"
            )
    return replies


def train_deployed(
    plan: BoostPlan,
    transport: GrpcTransport,
    alignment: Alignment,
    labels: LabelTables,
    *,
    max_frame_bytes: int = DEFAULT_MAX_BYTES,
    on_tree: Callable[[TreeReport, dict[str, float]], None] | None = None,
    after_tree: Callable[[ActiveBooster], None] | None = None,
    resume: TreeState | None = None,
) -> DeployedBoost:
    """Grow ``plan``'s trees with the parties of ``transport`` as passive holders.

    Args:
        plan: What to grow.
        transport: The run's gRPC transport, every party connected and set up
            (``setup_holders``).
        alignment: The run's alignment.
        labels: The server's labels.
        max_frame_bytes: The largest frame the parties accept.
        on_tree: Called after each tree with its report and the test metrics.
        after_tree: Called after ``on_tree`` with the label holder (to checkpoint it).
        resume: A checkpoint to continue from (its trees and training margins; the parties
            were set up with ``restore_trees``); the trees after it are grown.

    Raises:
        ConfigError: if the labels are not binary (the deployed objective is
            ``binary:logistic``).
        ProtocolError: if a party fails or answers wrongly.
    """
    if len(labels.classes) != 2 or plan.params.objective != "binary:logistic":
        raise ConfigError(
            "a deployed SecureBoost run trains boost.objective = 'binary:logistic' on a label"
            f" with 2 classes; this one has objective {plan.params.objective!r} and classes"
            f" {list(labels.classes)}"
        )
    aligned = labels.aligned(alignment.rows)
    train_labels = aligned[SPLIT_TRAIN].numpy().astype(np.float64)
    keys = KeyPair.generate(plan.key_bits)
    active = ActiveBooster(
        SERVER_ID,
        train_labels,
        np.zeros((len(train_labels), 0)),
        plan.params,
        keys,
        workers=plan.workers,
    )
    link = TransportLink(transport, max_frame_bytes=max_frame_bytes)
    outcome = DeployedBoost(active, link)
    try:
        link.phase = SETUP_PHASE
        active.connect(link, list(transport.party_ids))
        if resume is not None:
            active.restore(resume.trees, SplitTable(), resume.margins)
        for _ in range(len(active.trees), plan.params.num_trees):
            link.phase = TRAIN_PHASE
            report = grow_counted(active, link)
            started = time.perf_counter()
            outcome.test_margins = predict_test(active, link, len(aligned[SPLIT_TEST]))
            report.seconds["evaluate"] = time.perf_counter() - started
            scores = test_metrics(outcome.test_margins, aligned[SPLIT_TEST])
            outcome.reports.append(report)
            outcome.metrics.append(scores)
            if on_tree is not None:
                on_tree(report, scores)
            if after_tree is not None:
                after_tree(active)
        if not outcome.metrics:  # resumed with every tree grown: the final metrics
            outcome.test_margins = predict_test(active, link, len(aligned[SPLIT_TEST]))
        outcome.final = test_metrics(outcome.test_margins, aligned[SPLIT_TEST])
    finally:
        active.pool.close()
    return outcome


def predict_test(active: ActiveBooster, link: TransportLink, rows: int) -> Floats:
    """The model's margins of the aligned test rows (the parties hold them as ``test``)."""
    link.phase = PREDICT_PHASE
    return active.predict_margins(link, TEST_TABLE, np.zeros((rows, 0)))


def test_metrics(margins: Floats, labels: torch.Tensor) -> dict[str, float]:
    """Loss, accuracy, F1 and AUC of binary margins (logits)."""
    logits = torch.from_numpy(np.asarray(margins, dtype=np.float64)).unsqueeze(1)
    return evaluate_logits(Task(2), logits, labels)


def tree_line(report: TreeReport, scores: dict[str, float], trees: int) -> str:
    """The tree's line, as ``vfl run`` prints it: ``tree 2/5 | test_loss 0.38 | ... | 12.0 s``."""
    record = {
        "tree": report.tree + 1,
        **{f"test_{key}": value for key, value in scores.items()},
        "tree_bytes_up": report.bytes_up,
        "tree_bytes_down": report.bytes_down,
        "seconds": report.seconds,
    }
    return describe_tree(record, trees)
