"""``vfl launch RUN.toml``: the server and every party as local processes, for a one-machine trial.

Each process is ``vfl server|party ...`` (run as ``python -m vfl.cli``) with its output in
``RUN_DIR/logs/<name>.log``. The server's standard output (the per-epoch lines and the summary,
as ``vfl run`` prints them) is also copied to this process's standard output as it comes.
Unless ``OMP_NUM_THREADS`` is set, each process gets an equal share of the cores for torch's
thread pool: more busy OpenMP threads than cores make training many times slower. The server
listens on a free loopback port that it reports through a file; the parties start at the same
time (their imports and tables load while the server's do) and dial the port once it is
written (``vfl party --server-port-file``). If any process fails, the others are stopped and
the failure is reported with the end of its log.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from vfl.deploy.config import load_run_config
from vfl.deploy.port_file import read_port
from vfl.errors import ConfigError, ProtocolError
from vfl.results.files import check_new
from vfl.run.folders import default_run_dir

log = logging.getLogger(__name__)

LOGS = "logs"
"""The folder of RUN_DIR that holds every process's log (a new server run may find it)."""

POLL_S = 0.2
LOG_TAIL_LINES = 20


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    log_file: IO[bytes]
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


def launch(
    run_toml: Path,
    *,
    run_dir: Path | None = None,
    overrides: Sequence[str] = (),
    resume: bool = False,
    start_timeout_s: float = 120.0,
    python: str = sys.executable,
    predict: PredictArgs | None = None,
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

    Raises:
        ConfigError: if a party entry names no PARTY.toml, or (a new run) ``run_dir`` holds
            anything but ``logs`` (checked before anything is written).
        ProtocolError: if a process fails (the message names it and quotes its log).
    """
    config, deployment = load_run_config(run_toml, overrides)
    missing = [p.id for p in deployment.parties if not p.config]
    if missing:
        raise ConfigError(f"vfl launch needs config = PARTY.toml for parties {missing}")
    run_dir = run_dir if run_dir is not None else default_run_dir(config, run_toml.stem)
    if predict is None and not resume:  # before the logs folder goes in: nothing of a user's
        check_new(run_dir, allow=(LOGS,))
    logs = (run_dir if predict is None else predict.model) / LOGS
    logs.mkdir(parents=True, exist_ok=True)
    prefix = "" if predict is None else "predict-"
    port_file = logs / f"{prefix}server.port"
    port_file.unlink(missing_ok=True)
    extra = [f"--set={item}" for item in overrides] + (["--resume"] if resume else [])
    server_args = ["server", "--config", str(run_toml), "--port-file", str(port_file)]
    server_args += ["--set=deployment.listen=127.0.0.1:0"]
    server_args += ["--run-dir", str(run_dir)] if predict is None else predict.server_args()
    party_mode = ["--resume"] if resume else [] if predict is None else ["--predict"]
    env = _environment(len(deployment.parties) + 1)
    server_command = [python, "-m", "vfl.cli", *server_args, *extra]
    processes = [_start(f"{prefix}server", server_command, logs, env, echo=True)]
    previous = _stop_on_sigterm()
    try:
        for party in deployment.parties:  # they load while the server starts, then dial it
            args = ["party", "--config", party.config, "--server-port-file", str(port_file)]
            command = [python, "-m", "vfl.cli", *args, *party_mode]
            processes.append(_start(f"{prefix}party-{party.id}", command, logs, env))
        _wait_for_port(port_file, processes[0], start_timeout_s)
        _supervise(processes)
    finally:
        _stop(processes)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return run_dir


def _stop_on_sigterm() -> Any:
    """Turn SIGTERM into an exception, so that ``launch`` stops its processes on the way out."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    return signal.signal(signal.SIGTERM, interrupt)


def _environment(processes: int) -> dict[str, str]:
    """This process's environment, with a fair share of the cores per process.

    Output is unbuffered, so that logs and the relayed epoch lines appear as they are written.
    """
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // processes)))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _start(
    name: str, command: list[str], logs: Path, env: dict[str, str], *, echo: bool = False
) -> _Process:
    """Start ``command`` logging to ``logs/<name>.log``; ``echo`` also relays its stdout here."""
    log_path = logs / f"{name}.log"
    log_file = log_path.open("ab")
    stdout: IO[bytes] | int = subprocess.PIPE if echo else log_file
    popen = subprocess.Popen(command, stdout=stdout, stderr=log_file, env=env)
    log.info("started %s (pid %d), log %s", name, popen.pid, log_path)
    process = _Process(name, popen, log_path, log_file)
    if echo:
        assert popen.stdout is not None
        process.relay = threading.Thread(
            target=_relay, args=(popen.stdout, log_file), name=f"relay-{name}", daemon=True
        )
        process.relay.start()
    return process


def _relay(source: IO[bytes], log_file: IO[bytes]) -> None:
    """Copy each line of ``source`` to ``log_file`` and to this process's standard output."""
    for line in iter(source.readline, b""):
        log_file.write(line)
        log_file.flush()
        sys.stdout.write(line.decode(errors="replace"))
        sys.stdout.flush()


def _wait_for_port(port_file: Path, server: _Process, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        port = read_port(port_file)
        if port is not None:
            return port
        if server.popen.poll() is not None:
            raise _failure(server)
        time.sleep(POLL_S)
    raise _failure(server, f"did not start listening within {timeout_s:g} s")


def _supervise(processes: list[_Process]) -> None:
    """Wait until the server and every party exit; raise on the first failure."""
    while True:
        running = False
        for process in processes:
            status = process.popen.poll()
            if status is None:
                running = True
            elif status != 0:
                raise _failure(process)
        if not running:
            return
        time.sleep(POLL_S)


def _stop(processes: list[_Process]) -> None:
    for process in processes:
        if process.popen.poll() is None:
            process.popen.terminate()
    for process in processes:
        try:
            process.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.popen.kill()
            process.popen.wait()
        if process.relay is not None:
            process.relay.join(timeout=10)
        process.log_file.close()


def _failure(process: _Process, what: str = "") -> ProtocolError:
    status = process.popen.poll()
    reason = what or f"exited with status {status}"
    lines = process.log_path.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
    tail = "\n".join(f"    {line}" for line in lines)
    return ProtocolError(f"{process.name} {reason}; end of {process.log_path}:\n{tail}")
