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
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from vfl.deploy.config import PartyConfig, load_run_config
from vfl.deploy.port_file import read_port
from vfl.deploy.preflight import check_no_previous_run, checked_parties
from vfl.deploy.run_folder import LOGS, check_run_directory
from vfl.deploy.stopping import LaunchStop, again_command, forwarding_signals, launch_stopped
from vfl.errors import ConfigError, ProtocolError, VflError
from vfl.run.folders import default_run_dir
from vfl.run.progress import Fanout, Progress, Terminal, replay

log = logging.getLogger(__name__)

"""The folder of RUN_DIR that holds every process's log (a new server run may find it)."""

POLL_S = 0.2
LOG_TAIL_LINES = 20
STOP_WAIT_S = 10.0
"""How long a process told to stop (SIGTERM) may take before it is killed."""


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    log_file: IO[bytes]
    log_start: int = 0
    relay: threading.Thread | None = None


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
        _check_new_or_resumed(run_dir, resume, again, parties)
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
    env = _environment(len(deployment.parties) + 1)
    server_command = [python, "-m", "vfl.cli", *server_args, *extra]
    processes: list[_Process] = []
    popens: list[subprocess.Popen[bytes]] = []
    with forwarding_signals(popens) as stop:
        try:
            processes.append(_start(f"{prefix}server", server_command, logs, env, progress))
            popens.append(processes[0].popen)
            progress.note(f"started the server (pid {processes[0].popen.pid}); logs in {logs}")
            for party in deployment.parties:  # they load while the server starts, then dial it
                args = ["party", "--config", party.config, "--server-port-file", str(port_file)]
                command = [python, "-m", "vfl.cli", *args, *party_mode]
                processes.append(_start(f"{prefix}party-{party.id}", command, logs, env))
                popens.append(processes[-1].popen)
            pids = ", ".join(f"{p.name} (pid {p.popen.pid})" for p in processes[1:])
            progress.note(f"started {pids}")
            if _wait_for_port(port_file, processes[0], start_timeout_s, stop):
                _supervise(processes, stop)
        finally:
            _stop(processes)
    if stop.reason:
        raise LaunchStopped(launch_stopped(run_dir, stop.reason, again), stop.reason)
    return run_dir


def _check_new_or_resumed(
    run_dir: Path, resume: bool, again: str, parties: dict[int, PartyConfig]
) -> None:
    """The run folder (as ``vfl server`` checks it) and, for a new run, every party's state."""
    existed = run_dir.exists()
    check_run_directory(run_dir, resume, f"{again} --resume")
    try:
        if not resume:
            check_no_previous_run(parties, again)
    except ConfigError:
        if not existed:
            run_dir.rmdir()  # made empty by the check just now
        raise


def _environment(processes: int) -> dict[str, str]:
    """This process's environment, with a fair share of the cores per process.

    Output is unbuffered, so that logs and the relayed events appear as they are written.
    """
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // processes)))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _start(
    name: str,
    command: list[str],
    logs: Path,
    env: dict[str, str],
    progress: Progress | None = None,
) -> _Process:
    """Start ``command`` logging to ``logs/<name>.log``; its stdout goes to ``progress``."""
    log_path = logs / f"{name}.log"
    log_file = log_path.open("ab")
    stdout: IO[bytes] | int = subprocess.PIPE if progress is not None else log_file
    popen = subprocess.Popen(
        command, stdout=stdout, stderr=log_file, env=env, start_new_session=True
    )
    log.debug("started %s (pid %d), log %s", name, popen.pid, log_path)
    process = _Process(name, popen, log_path, log_file, log_start=log_file.tell())
    if progress is not None:
        assert popen.stdout is not None
        process.relay = threading.Thread(
            target=_relay,
            args=(popen.stdout, log_file, progress),
            name=f"relay-{name}",
            daemon=True,
        )
        process.relay.start()
    return process


def _relay(source: IO[bytes], log_file: IO[bytes], progress: Progress) -> None:
    """Show each event of ``source`` with ``progress`` (and in the log); copy other lines."""
    logged = Terminal(bar=False, stream=_TextLog(log_file))
    shown = Fanout(progress, logged)
    for raw in iter(source.readline, b""):
        line = raw.decode(errors="replace")
        if replay(line.rstrip("\n"), shown):
            continue
        log_file.write(raw)
        log_file.flush()
        sys.stdout.write(line)
        sys.stdout.flush()


class _TextLog:
    """A binary log file as the text stream ``Terminal`` writes to."""

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle

    def write(self, text: str, /) -> int:
        """Append ``text``, encoded."""
        self._handle.write(text.encode())
        return len(text)

    def flush(self) -> None:
        """Flush the file."""
        self._handle.flush()

    def isatty(self) -> bool:
        """A file."""
        return False


def _wait_for_port(port_file: Path, server: _Process, timeout_s: float, stop: LaunchStop) -> int:
    """The server's port once it listens; 0 if a signal stopped it first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        port = read_port(port_file)
        if port is not None:
            return port
        if server.popen.poll() is not None:
            if stop.reason:
                return 0
            raise _failure(server)
        time.sleep(POLL_S)
    raise _failure(server, f"did not start listening within {timeout_s:g} s")


def _supervise(processes: list[_Process], stop: LaunchStop) -> None:
    """Wait until the server and every party exit; raise on the first failure.

    Once a signal stopped the server, its exit ends the wait (the parties are stopped next).
    """
    while True:
        running = False
        for process in processes:
            status = process.popen.poll()
            if status is None:
                running = True
            elif stop.reason and process is processes[0]:
                return
            elif status != 0 and not stop.reason:
                raise _failure(process)
        if not running or stop.at_once:
            return
        time.sleep(POLL_S)


def _stop(processes: list[_Process]) -> None:
    for process in processes:
        if process.popen.poll() is None:
            process.popen.terminate()
    for process in processes:
        try:
            process.popen.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            process.popen.kill()
            process.popen.wait()
        if process.relay is not None:
            process.relay.join(timeout=10)
        process.log_file.close()


def _failure(process: _Process, what: str = "") -> ProtocolError:
    """``process`` failed: what it wrote to its log in this launch (its end) says why."""
    status = process.popen.poll()
    reason = what or f"exited with status {status}"
    with process.log_path.open("rb") as handle:
        handle.seek(process.log_start)
        written = handle.read().decode(errors="replace")
    lines = written.splitlines()[-LOG_TAIL_LINES:]
    tail = "\n".join(f"    {line}" for line in lines)
    return ProtocolError(f"{process.name} {reason}; end of {process.log_path}:\n{tail}")
