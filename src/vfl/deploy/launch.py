"""``vfl launch RUN.toml``: the server and every party as local processes, for a one-machine trial.

Each process is ``vfl server|party ...`` (run as ``python -m vfl.cli``) with its output in
``RUN_DIR/logs/<name>.log``. The server reports its set-up phases, its epochs and its rounds as
events on its standard output (``vfl server --events``); this process shows them as they come
(``vfl.run.progress.replay``): its own notes, the server's phases, a line per epoch and, on a
terminal, a bar of the epoch's rounds; the notes and epoch lines also go to ``logs/server.log``.
Unless ``OMP_NUM_THREADS`` is set, each process gets an equal share of the cores for torch's
thread pool: more busy OpenMP threads than cores make training many times slower. The server
listens on a free loopback port that it reports through a file; the parties start at the same
time (their imports and tables load while the server's do) and dial the port once it is
written (``vfl party --server-port-file``). If any process fails, the others are stopped and
the failure is reported with the end of what this launch added to its log.

The processes run in sessions of their own, so that Ctrl-C at the terminal reaches this process
alone: the first Ctrl-C (or SIGTERM) is passed to the server, which stops after the round with a
checkpoint that every party saves too; then the parties are stopped, and ``LaunchStopped`` says
what was saved and the exact command that continues. A second signal stops every process at once.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vfl.deploy.config import PartyConfig, load_run_config
from vfl.deploy.forked import can_fork, preload
from vfl.deploy.preflight import check_no_previous_run, checked_parties
from vfl.deploy.process import Process
from vfl.deploy.processes import (
    Child,
    await_port,
    environment,
    relay,
    start,
    stop_all,
    supervise,
)
from vfl.deploy.run_folder import LOGS, check_run_directory
from vfl.deploy.stopping import again_command, forwarding_signals, launch_stopped
from vfl.errors import ConfigError, VflError
from vfl.run.folders import default_run_dir
from vfl.run.progress import Progress, Terminal

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PredictArgs:
    """A batch prediction to launch instead of training (``vfl launch --predict``).

    Attributes:
        model: The trained run's directory (``bundle/server`` inside).
        data: The server's new IDs.
        out: The predictions CSV.
        force: Replace existing prediction files.
    """

    model: Path
    data: Path
    out: Path
    force: bool = False

    def server_args(self) -> list[str]:
        """The server's prediction options."""
        args = ["--predict", "--model", str(self.model), "--data", str(self.data)]
        return [*args, "--out", str(self.out)] + (["--force"] if self.force else [])


class LaunchStopped(VflError):
    """A signal stopped the launch; the message says what was saved and how to go on.

    Attributes:
        reason: The signal's name (``SIGINT``, ``SIGTERM``).
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def launch(
    run_toml: Path,
    *,
    run_dir: Path | None = None,
    overrides: Sequence[str] = (),
    resume: bool = False,
    start_timeout_s: float = 120.0,
    python: str = sys.executable,
    predict: PredictArgs | None = None,
    progress: Progress | None = None,
) -> Path:
    """Run a deployment on this machine and return its run directory.

    Args:
        run_toml: The server's RUN.toml; each ``[[deployment.parties]]`` entry names its
            PARTY.toml in ``config``.
        run_dir: The run directory (default: ``output.dir / output.name`` as ``vfl run``).
        overrides: ``key=value`` overrides of RUN.toml.
        resume: Resume the server and every party from their checkpoints.
        start_timeout_s: How long the server may take to start listening.
        python: The interpreter that runs the processes.
        predict: Predict with a trained run instead of training: the server and every party
            start with ``--predict`` (each party reads its ``data.predict`` table), and the
            logs go to ``MODEL/logs/predict-<name>.log``.
        progress: Shows this launch's notes and the server's reports (default: a terminal's).

    Raises:
        ConfigError: if a party entry names no PARTY.toml, a PARTY.toml or TLS file is
            invalid, or (a new run) ``run_dir`` or a party's ``state_dir`` holds a run (the
            message names the command that continues it), or ``run_dir`` anything else but
            ``logs`` (checked before anything is written or started).
        ProtocolError: if a process fails (the message names it and quotes its log).
        LaunchStopped: if a signal stopped it.
    """
    config, deployment = load_run_config(run_toml, overrides)
    missing = [p.id for p in deployment.parties if not p.config]
    if missing:
        raise ConfigError(f"vfl launch needs config = PARTY.toml for parties {missing}")
    again = again_command(run_toml, run_dir, overrides)
    run_dir = run_dir if run_dir is not None else default_run_dir(config, run_toml.stem)
    parties = checked_parties(deployment)
    if predict is None:  # before the logs folder goes in: nothing of a user's is replaced
        elsewhere = again_command(run_toml, None, overrides)  # a run in another folder
        _check_new_or_resumed(run_dir, resume, again, parties, elsewhere)
    progress = progress or Terminal()
    logs = (run_dir if predict is None else predict.model) / LOGS
    logs.mkdir(parents=True, exist_ok=True)
    prefix = "" if predict is None else "predict-"
    port_file = logs / f"{prefix}server.port"
    port_file.unlink(missing_ok=True)
    extra = [f"--set={item}" for item in overrides] + (["--resume"] if resume else [])
    server_args = ["server", "--config", str(run_toml), "--port-file", str(port_file)]
    server_args += ["--set=deployment.listen=127.0.0.1:0"]
    server_args += ["--run-dir", str(run_dir), "--events"] if predict is None else []
    server_args += [] if predict is None else predict.server_args()
    party_mode = ["--resume"] if resume else [] if predict is None else ["--predict"]
    env = environment(len(deployment.parties) + 1)
    on_cpu = config.train.device == "cpu" and all(
        party.device in ("", "cpu") for party in parties.values()
    )
    forking = _preloaded(python, len(deployment.parties), progress) if on_cpu else python
    processes: list[Child] = []
    popens: list[Process] = []
    with forwarding_signals(popens) as stop:
        try:
            server = start(
                f"{prefix}server", [*server_args, *extra], logs, env, python=forking, events=True
            )
            processes.append(server)
            popens.append(server.popen)
            for party in deployment.parties:  # they load while the server starts, then dial it
                args = ["party", "--config", party.config, "--server-port-file", str(port_file)]
                processes.append(
                    start(
                        f"{prefix}party-{party.id}",
                        [*args, *party_mode],
                        logs,
                        env,
                        python=forking,
                        siblings=processes,
                    )
                )
                popens.append(processes[-1].popen)
            relay(server, progress)
            progress.note(f"started the server (pid {server.popen.pid}); logs in {logs}")
            pids = ", ".join(f"{p.name} (pid {p.popen.pid})" for p in processes[1:])
            progress.note(f"started {pids}")
            if await_port(port_file, server, start_timeout_s, stop):
                supervise(processes, stop)
        finally:
            stop_all(processes)
    if stop.reason:
        raise LaunchStopped(launch_stopped(run_dir, stop.reason, again), stop.reason)
    return run_dir


def _preloaded(python: str, parties: int, progress: Progress) -> str | None:
    """``None`` once this interpreter has imported what the processes need, else ``python``.

    ``None``: the processes are forked from this interpreter (``vfl.deploy.forked``); else
    ``python`` runs each of them. Only for a launch on the CPU: a process that forks after
    torch has touched CUDA gets children that cannot use it, and whether torch's and vfl's
    imports touch it has not been checked on a GPU.
    """
    if not can_fork(python):
        return python
    started = time.perf_counter()
    try:
        preload()
    except (ImportError, RuntimeError) as error:
        log.debug("starting the processes with %s: %s", python, error)
        return python
    seconds = time.perf_counter() - started
    progress.note(
        f"loaded torch and vfl once for the server and {parties} parties ({seconds:.1f} s)"
    )
    return None


def _check_new_or_resumed(
    run_dir: Path, resume: bool, again: str, parties: dict[int, PartyConfig], elsewhere: str
) -> None:
    """The run folder (as ``vfl server`` checks it) and, for a new run, every party's state.

    ``again`` is this launch's command line; ``elsewhere`` the same without its ``--run-dir``,
    for a run the parties hold whose folder is another.
    """
    existed = run_dir.exists()
    check_run_directory(run_dir, resume, f"{again} --resume")
    try:
        if not resume:
            check_no_previous_run(parties, elsewhere, run_dir)
    except ConfigError:
        if not existed:
            run_dir.rmdir()  # made empty by the check just now
        raise
