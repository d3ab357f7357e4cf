"""``vfl server`` for ``protocol.name = "secureboost"``: the run around the deployed trees.

After the PSI (``vfl.deploy.server``), the parties become passive holders, the trees grow
(``vfl.deploy.boost_server``), each tree's line goes to the progress notes and its record to
``metrics.jsonl``, every holder writes its own part of the model (``output.bundle``), the
parties are told the run is over, and ``summary.json`` gets the final test metrics, the trees'
bytes and seconds, and the set-up's phases.
"""

from __future__ import annotations

import time
from typing import Any

from vfl.boost.active import ActiveBooster
from vfl.boost.timing import TreeReport
from vfl.config import RunConfig
from vfl.config.io import to_toml
from vfl.deploy.alignment import Alignment
from vfl.deploy.boost_server import (
    BoostPlan,
    DeployedBoost,
    frame_limit,
    setup_holders,
    train_deployed,
    tree_line,
)
from vfl.deploy.config import DeploymentConfig
from vfl.deploy.control import ask
from vfl.deploy.data import LabelTables
from vfl.deploy.export import deployed_fingerprint
from vfl.deploy.messages import CheckpointRequest, ControlAck, ExportRequest
from vfl.deploy.phases import SetupPhases
from vfl.results.files import SUMMARY, RunDirectory, keep_copy
from vfl.run import tree_checkpoint
from vfl.run.boosting import params_of
from vfl.run.bundles import BUNDLE, SERVER
from vfl.run.tree_bundles import write_label_holder
from vfl.run.tree_checkpoint import TreeState
from vfl.transport.grpc_transport import GrpcTransport
from vfl.wire import Shutdown

PROTOCOL = "secureboost"


def is_boost(config: RunConfig) -> bool:
    """Whether ``config`` grows SecureBoost trees."""
    return config.protocol.name == PROTOCOL


def boost_plan(config: RunConfig) -> BoostPlan:
    """The run's ``[boost]`` table as what the label holder (the server, no columns) grows."""
    boost = config.boost
    return BoostPlan(params_of(config), key_bits=boost.key_bits, workers=boost.workers or None)


def run_boost(
    config: RunConfig,
    deployment: DeploymentConfig,
    labels: LabelTables,
    alignment: Alignment,
    transport: GrpcTransport,
    run: RunDirectory,
    phases: SetupPhases,
    resume: TreeState | None = None,
) -> dict[str, Any]:
    """Set the holders up, grow the trees, end the run; returns the summary (also written).

    ``resume``: the run's checkpoint, to continue after its last complete tree (every party
    reloads its split rules of that tree; the earlier summary is kept as a copy).
    """
    plan = boost_plan(config)
    done = 0 if resume is None else resume.trees_done
    phases.parties_begin(-1)
    setup_holders(
        transport, alignment, labels, plan.params.max_bin, config=config, restore_trees=done
    )
    phases.holders_ready(plan.params.num_trees - done)
    if resume is not None and run.file(SUMMARY).exists():
        keep_copy(run.file(SUMMARY), "resumed")
    started = time.monotonic()

    def on_tree(report: TreeReport, scores: dict[str, float]) -> None:
        phases.progress.note(tree_line(report, scores, plan.params.num_trees))
        run.append_metrics({"tree": report.tree + 1, **{f"test_{k}": v for k, v in scores.items()}})

    def checkpoint(active: ActiveBooster) -> None:
        if config.train.checkpoint:
            earlier = 0.0 if resume is None else resume.elapsed
            save_checkpoint(config, transport, run, active, earlier + time.monotonic() - started)

    deployed = train_deployed(
        plan,
        transport,
        alignment,
        labels,
        max_frame_bytes=frame_limit(deployment.max_message_mib * 2**20),
        on_tree=on_tree,
        after_tree=checkpoint,
        resume=resume,
    )
    wall_time = time.monotonic() - started
    if config.output.bundle:
        export_bundles(config, deployed, transport, alignment, run, labels.classes)
    transport.request({p: Shutdown(round=0) for p in transport.party_ids}, phase="setup")
    transport.close()
    summary = boost_summary(deployed, wall_time)
    summary["setup"] = phases.summary()
    run.write_json(SUMMARY, summary)
    return summary


def save_checkpoint(
    config: RunConfig,
    transport: GrpcTransport,
    run: RunDirectory,
    active: ActiveBooster,
    elapsed: float,
) -> None:
    """After a tree: every party saves its split rules, then the server its checkpoint.

    The parties save first, so the server's checkpoint never names a tree a party lacks (a
    party keeps its newest checkpoints, enough for a server that died between the two).
    """
    trees = len(active.trees)
    ask(transport, dict.fromkeys(transport.party_ids, CheckpointRequest(round=trees)), ControlAck)
    ledger = transport.ledger
    state = TreeState(
        trees=list(active.trees),
        label_splits=active.splits,
        margins=active.margins,
        holder_splits={},  # each party keeps its own, in its state directory
        elapsed=elapsed,
        config=to_toml(config),
        bytes={
            "up": ledger.total(phase="train", direction="up"),
            "down": ledger.total(phase="train", direction="down"),
            "eval": ledger.total(phase="eval"),
        },
    )
    tree_checkpoint.save(run, state)


def export_bundles(
    config: RunConfig,
    deployed: DeployedBoost,
    transport: GrpcTransport,
    alignment: Alignment,
    run: RunDirectory,
    classes: tuple[str, ...],
) -> str:
    """Every party writes its own bundle, then the server its own; returns the fingerprint."""
    fingerprint = deployed_fingerprint(config, alignment.id)
    request = ExportRequest(round=0, fingerprint=fingerprint)
    ask(transport, dict.fromkeys(transport.party_ids, request), ControlAck)
    target = run.file(BUNDLE) / SERVER
    write_label_holder(target, config, fingerprint, deployed.active, transport.party_ids, classes)
    return fingerprint


def boost_summary(deployed: DeployedBoost, wall_time: float) -> dict[str, Any]:
    """``summary.json`` of a deployed SecureBoost run."""
    final = {f"test_{k}": v for k, v in deployed.final.items()}
    ledger = deployed.link.transport.ledger
    return {
        "protocol": PROTOCOL,
        "deployed": True,
        "final": final,
        "trees": deployed.tree_records(),
        "wall_time": round(wall_time, 3),
        "bytes": {
            "train_down": ledger.total(phase="train", direction="down"),
            "train_up": ledger.total(phase="train", direction="up"),
            "eval_down": ledger.total(phase="eval", direction="down"),
            "eval_up": ledger.total(phase="eval", direction="up"),
        },
    }
