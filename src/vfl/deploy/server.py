"""``vfl server``: the label holder's process. It aligns, sets the parties up and trains.

The server builds its ``Server`` and the protocol loop with the composition root
(``vfl.run.compose``) exactly as the simulator does, over the gRPC transport the root builds
(``vfl.run.deployment``) instead of the in-process one, and trains with the same ``fit``. Its
parties are a ``RemoteParties`` group: the per-epoch checkpoint makes each party save its own
role, named by the round counter.

The parties' roles are set up and checkpointed by a ``Coordinator`` (``vfl.deploy.coordinator``);
a party lost during training is waited for and the run resumed from its last checkpoint
(``vfl.deploy.recovery``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc
import torch

from vfl.config import RunConfig
from vfl.config.io import to_toml
from vfl.deploy.alignment import Alignment, align
from vfl.deploy.boost_run import is_boost, run_boost
from vfl.deploy.config import DeploymentConfig
from vfl.deploy.coordinator import Coordinator
from vfl.deploy.data import LabelTables, load_labels
from vfl.deploy.export import export_deployed
from vfl.deploy.phases import SetupPhases
from vfl.deploy.recovery import fit_with_recovery
from vfl.deploy.run_folder import ALIGNMENT, DEPLOYMENT, WIRE, check_run_directory
from vfl.deploy.tls import server_tls
from vfl.errors import DataError
from vfl.results.files import (
    CONFIG,
    SUMMARY,
    RunDirectory,
)
from vfl.results.metrics import Task
from vfl.run.boosting import resumable_trees
from vfl.run.bundles import BUNDLE
from vfl.run.compose import Blueprint, build_server
from vfl.run.deployment import (
    RemoteParties,
    ServerNetwork,
    build_deployed_session,
    build_server_transport,
)
from vfl.run.runner import finish_summary
from vfl.run.session import Session
from vfl.run.signals import StopRequest
from vfl.run.stages import use_threads
from vfl.run.tree_checkpoint import TreeState
from vfl.seeding import derive_seed
from vfl.transport.grpc_transport import GrpcTransport
from vfl.transport.ledger import Ledger
from vfl.transport.link import add_snapshots
from vfl.transport.retry import RetryPolicy
from vfl.transport.security import ServerTls
from vfl.wire import SPLIT_TEST, SPLIT_TRAIN


def run_server(
    config: RunConfig,
    deployment: DeploymentConfig,
    run_dir: Path,
    *,
    resume: bool = False,
    port_file: Path | None = None,
    source: str = "",
    phases: SetupPhases | None = None,
    stop: StopRequest | None = None,
    resume_command: str = "",
) -> dict[str, Any]:
    """Serve the parties and train as configured; returns the summary.

    Args:
        config: The run config (``[data]`` names the labels tables).
        deployment: The ``[deployment]`` table.
        run_dir: The run directory (results, checkpoints, alignment).
        resume: Continue the run in ``run_dir`` from its last checkpoint.
        port_file: Write the port the server listens on here, once it listens.
        source: Where ``config`` was read (RUN.toml and its ``--set`` overrides), for the
            refusal of a resume whose config changed.
        phases: Notes the set-up phases (and, through its ``progress``, the epochs) and times
            them for the summary's ``setup``.
        stop: Set by a signal: set-up stops at once (``stop.at_once``), training after the
            round with a checkpoint (``RunStopped``).
        resume_command: The command that continues a run found in ``run_dir`` (named when a
            new run is refused there).

    Raises:
        ConfigError: if a TLS file is missing, unparsable, mismatched or expired (checked
            first), ``run_dir`` already holds a run (without ``resume``) or none (with it), or
            ``config`` differs from the one the checkpoint was trained with in a key that cannot
            change on resume (as ``vfl run --resume``).
        ProtocolError: if parties fail and do not recover, naming them.
    """
    tls = server_tls(deployment.tls)
    boost = is_boost(config)
    checked = None if boost else config  # a tree run's checkpoint is checked below
    run = check_run_directory(run_dir, resume, resume_command, config=checked, source=source)
    trees = resumable_trees(config, run.path) if boost and resume else None
    run.clear_failure()
    phases = phases or SetupPhases()
    try:
        return _serve(
            config,
            deployment,
            run,
            tls,
            resume=resume,
            port_file=port_file,
            phases=phases,
            stop=stop,
            trees=trees,
        )
    except BaseException as error:
        run.record_failure(error, stopped_message(error, phases.doing))
        raise


def stopped_message(error: BaseException, doing: str) -> str:
    """What ``error.txt`` says about a server that ended with ``error`` while ``doing``."""
    if isinstance(error, KeyboardInterrupt):
        reason = getattr(error, "reason", "") or "an interruption"
        return f"stopped by {reason} while {doing}"
    return str(error) or type(error).__name__


def _serve(
    config: RunConfig,
    deployment: DeploymentConfig,
    run: RunDirectory,
    tls: ServerTls,
    *,
    resume: bool,
    port_file: Path | None,
    phases: SetupPhases,
    stop: StopRequest | None,
    trees: TreeState | None = None,
) -> dict[str, Any]:
    """Load the labels, listen, align, train and summarize (``run_server``'s work).

    ``trees``: a resumed SecureBoost run's checkpoint.
    """
    use_threads(config.train.threads)
    labels = load_labels(config.data)
    earlier = run.read_json(WIRE) if resume and run.file(WIRE).exists() else {}
    transport = listen(deployment, tls)
    finished = False
    try:
        if port_file is not None:
            port_file.write_text(f"{transport.port}\n")
        phases.listening(transport.port, transport.party_ids)
        phases.await_parties(transport, deployment.connect_timeout_s)
        if is_boost(config):
            alignment = _alignment(run, transport, labels, resume, phases)
            run.write_text(CONFIG, to_toml(config))
            run.write_text(DEPLOYMENT, to_toml(deployment))
            summary = run_boost(
                config, deployment, labels, alignment, transport, run, phases, resume=trees
            )
            finished = True
            return summary
        session = _prepare(config, deployment, labels, transport, run, resume, phases)
        fit_with_recovery(session, config, deployment, run, resume, stop, phases.progress)
        if config.output.bundle:
            export_deployed(
                session.trainer,
                transport,
                config,
                alignment_id=session.parties.coordinator.alignment_id,
                folder=run.file(BUNDLE),
                classes=labels.classes,
            )
        session.trainer.close()  # tells the parties the run is over
        finished = True
        summary = finish_summary(config, session, run, deployed=True)
        summary["setup"] = phases.summary()
        run.write_json(SUMMARY, summary)
        return summary
    finally:
        wire = add_snapshots(earlier, transport.wire.snapshot())  # over the run's processes
        run.write_text(WIRE, json.dumps(wire, indent=2) + "\n")
        if not finished:  # parties keep waiting for a resumed server (or their give_up_s)
            transport.close()


def listen(
    deployment: DeploymentConfig,
    tls: ServerTls,
    *,
    model: str = "",
    policy: RetryPolicy | None = None,
    ledger: Ledger | None = None,
    control_timeout_s: float | None = None,
    services: Sequence[grpc.GenericRpcHandler] = (),
    service_workers: int = 0,
) -> GrpcTransport:
    """The server's transport, listening as ``deployment`` says.

    ``model``: the run fingerprint of the model a predicting server uses (parties must bring
    bundles of that run); ``policy`` replaces the deployment's retry policy and
    ``control_timeout_s`` its ``setup_timeout_s``; ``services`` are more gRPC services on the
    same port (``vfl serve``'s scoring API), which need ``service_workers`` threads.
    """
    network = ServerNetwork(
        deployment.credentials(),
        listen=deployment.listen,
        policy=policy or deployment.retry_policy(),
        control_timeout_s=control_timeout_s or deployment.setup_timeout_s,
        keepalive_s=deployment.keepalive_s,
        max_bytes=deployment.max_message_mib * 2**20,
    )
    return build_server_transport(
        network,
        tls,
        model=model,
        ledger=ledger,
        services=services,
        service_workers=service_workers,
    )


def _prepare(
    config: RunConfig,
    deployment: DeploymentConfig,
    labels: LabelTables,
    transport: GrpcTransport,
    run: RunDirectory,
    resume: bool,
    phases: SetupPhases,
) -> Session[RemoteParties[Coordinator]]:
    """Align (or reload the alignment), record the configs, set the parties up."""
    alignment = _alignment(run, transport, labels, resume, phases)
    run.write_text(CONFIG, to_toml(config))
    run.write_text(DEPLOYMENT, to_toml(deployment))
    coordinator = Coordinator(
        transport,
        config,
        alignment.id,
        train_labels=labels.aligned(alignment.rows)[SPLIT_TRAIN],
        num_classes=len(labels.classes),
        connect_timeout_s=deployment.connect_timeout_s,
    )
    if not resume:  # modules may draw from the global RNG (dropout): make runs repeatable
        torch.manual_seed(derive_seed(config.train.seed, "torch-global"))
    return _build(config, labels, alignment, coordinator, run, resume, phases)


def _alignment(
    run: RunDirectory,
    transport: GrpcTransport,
    labels: LabelTables,
    resume: bool,
    phases: SetupPhases,
) -> Alignment:
    path = run.file(ALIGNMENT)
    if resume:
        phases.psi_reloaded()
        return Alignment.load(path)
    ids = {split: table.ids for split, table in labels.splits.items()}
    phases.psi_begins(ids, len(transport.party_ids))
    alignment = align(transport, ids)
    phases.psi_ends(alignment, ids)
    alignment.save(path)
    return alignment


def _build(
    config: RunConfig,
    labels: LabelTables,
    alignment: Alignment,
    coordinator: Coordinator,
    run: RunDirectory,
    resume: bool,
    phases: SetupPhases,
) -> Session[RemoteParties[Coordinator]]:
    restore_round = int(run.load_checkpoint()["session"]["trainer"]["rounds"]) if resume else -1
    phases.parties_begin(restore_round)
    replies = coordinator.setup(restore_round)
    aligned = labels.aligned(alignment.rows)
    for party, reply in replies.items():
        counts = (reply.num_train, reply.num_test)
        expected = (len(aligned[SPLIT_TRAIN]), len(aligned[SPLIT_TEST]))
        if counts != expected:
            raise DataError(
                f"party {party} aligned {counts} train/test rows but the server {expected}"
            )
    blueprint = Blueprint.from_config(config, deployed=True)
    blueprint.warn_of_risks()
    server = build_server(
        blueprint,
        task=Task(len(labels.classes)),
        train_labels=aligned[SPLIT_TRAIN],
        test_labels=aligned[SPLIT_TEST],
        widths={party: reply.width for party, reply in replies.items()},
    )
    parties = RemoteParties(coordinator, restore_round if resume else None)
    session = build_deployed_session(blueprint, server, coordinator.transport, parties)
    phases.parties_ready(config.train.epochs, len(session.trainer.sampler), max(restore_round, 0))
    if not resume and config.train.checkpoint:
        run.save_checkpoint(
            {
                "epoch": 0,
                "elapsed": 0.0,
                "session": session.state_dict(),
                "torch_rng": torch.get_rng_state(),
                "config": to_toml(config),
            }
        )
    return session
