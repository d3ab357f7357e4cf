"""The server's training with recoveries: a lost party is waited for, the run resumed.

When a party is lost (its connection broke and did not come back in time) or comes back from a
restarted process, training stops with a ``ProtocolError``; the server then waits for every
party to be connected again and resumes the run from its last checkpoint (at most one epoch
lost), up to ``max_recoveries`` times. A party that does not come back within
``connect_timeout_s`` stops the run with an error naming it. A party that stays connected but
does not answer through every retry (a stuck process) stops the run at once with an error
naming it: rolling back would meet the same stuck process again. Either way the run can be
continued later with ``--resume`` from its last checkpoint.
"""

from __future__ import annotations

import logging

from vfl.config import RunConfig
from vfl.deploy.config import DeploymentConfig
from vfl.deploy.coordinator import Coordinator
from vfl.errors import ProtocolError
from vfl.results.files import CHECKPOINT, RunDirectory
from vfl.run.deployment import RemoteParties
from vfl.run.progress import Progress
from vfl.run.runner import fit_as_configured
from vfl.run.session import Session
from vfl.run.signals import StopRequest
from vfl.transport.grpc_transport import GrpcTransport
from vfl.transport.link import PartyUnavailableError, PartyUnresponsiveError

log = logging.getLogger("vfl.deploy.server")  # log lines name the server's process


def fit_with_recovery(
    session: Session[RemoteParties[Coordinator]],
    config: RunConfig,
    deployment: DeploymentConfig,
    run: RunDirectory,
    resume: bool,
    stop: StopRequest | None,
    progress: Progress,
) -> None:
    """Train as configured; after a lost party, wait for it and resume from the checkpoint.

    Up to ``deployment.max_recoveries`` times; a party that stays connected and silent, a run
    without checkpoints, or one more loss stops the run with where it can be continued.

    Raises:
        ProtocolError: if parties fail and do not recover, naming them.
    """
    recoveries = 0
    while True:
        has_epoch_zero = any(int(r["epoch"]) == 0 for r in run.read_metrics(torn_tail=True))
        if stop is not None:
            stop.at_once = False  # a signal now stops after the round, with a checkpoint
        try:
            fit_as_configured(
                session,
                config,
                run,
                resume=resume,
                eval_at_start=config.train.eval_at_start and not has_epoch_zero,
                stop=stop,
                progress=progress,
            )
            return
        except ProtocolError as error:
            failure = _party_failure(error)
            if failure is None:
                raise
            if (
                isinstance(failure, PartyUnresponsiveError)
                or not config.train.checkpoint
                or recoveries >= deployment.max_recoveries
            ):
                raise ProtocolError(f"{error}; {_stopped_at(run)}") from error
            recoveries += 1
            log.warning(
                "training stopped (%s); resuming from the last checkpoint once every party is"
                " connected (recovery %d of %d)",
                error,
                recoveries,
                deployment.max_recoveries,
            )
            if stop is not None:
                stop.at_once = True  # no round to finish while waiting
            _await_parties(session.parties.coordinator.transport, deployment, run)
            resume = True


def _await_parties(
    transport: GrpcTransport, deployment: DeploymentConfig, run: RunDirectory
) -> None:
    """Wait for every party to be connected again, or stop with what to do next."""
    try:
        transport.wait_for_parties(deployment.connect_timeout_s)
    except PartyUnavailableError as error:
        raise PartyUnavailableError(f"{error}; {_stopped_at(run)}") from None


def _party_failure(error: ProtocolError) -> PartyUnavailableError | None:
    """The lost or silent party behind a failed run, if that is why it failed (not a bug)."""
    cause = error if isinstance(error, PartyUnavailableError) else error.__cause__
    return cause if isinstance(cause, PartyUnavailableError) else None


def _stopped_at(run: RunDirectory) -> str:
    """Where a stopped run can be continued from, and how."""
    if not run.file(CHECKPOINT).exists():
        return "the run stops without a checkpoint (train.checkpoint = false?)"
    epoch = int(run.load_checkpoint()["epoch"])
    return (
        f"the run stops at its checkpoint after epoch {epoch}: restart the missing or stuck"
        " parties (with --resume), then the server with --resume"
    )
