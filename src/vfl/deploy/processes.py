"""The processes of ``vfl launch``: started with their logs, supervised, stopped.

A child's standard error goes to its log file; the server's standard output carries its
progress events, which ``relay_events`` shows as they come (``vfl.run.progress.replay``) and
copies into its log. A failed child is reported with the end of what this launch added to its
log (``failure``).
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

from vfl.deploy.forked import ENTRY, fork_vfl
from vfl.deploy.port_file import read_port
from vfl.deploy.process import Process, kill_group
from vfl.deploy.stopping import LaunchStop
from vfl.errors import ProtocolError
from vfl.run.progress import Fanout, Progress, Terminal, replay

log = logging.getLogger("vfl.deploy.launch")  # log lines name the launch

POLL_S = 0.2
LOG_TAIL_LINES = 20
STOP_WAIT_S = 10.0
"""How long a process told to stop (SIGTERM) may take before it is killed."""


@dataclass
class Child:
    """A process of the launch, its log, and the thread relaying its events (the server's)."""

    name: str
    popen: Process
    log_path: Path
    log_file: IO[bytes]
    log_start: int = 0
    relay: threading.Thread | None = None

    def descriptors(self) -> list[int]:
        """The file descriptors this launch holds for it: its log, its piped output."""
        piped = [self.popen.stdout.fileno()] if self.popen.stdout is not None else []
        return [self.log_file.fileno(), *piped]


def environment(processes: int) -> dict[str, str]:
    """This process's environment, with a fair share of the cores per process.

    Output is unbuffered, so that logs and the relayed events appear as they are written.
    """
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // processes)))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def start(
    name: str,
    args: list[str],
    logs: Path,
    env: dict[str, str],
    *,
    python: str | None,
    events: bool = False,
    siblings: Sequence[Child] = (),
) -> Child:
    """Start ``vfl ARGS`` logging to ``logs/<name>.log``, its stdout piped if ``events``.

    ``python``: run as ``python -m vfl.cli``; ``None``: forked from this interpreter
    (``vfl.deploy.forked``; the caller preloaded it). ``relay`` shows the piped events.
    """
    log_path = logs / f"{name}.log"
    log_file = log_path.open("ab")
    log_file.write(f"---- {time.strftime('%Y-%m-%d %H:%M:%S')} vfl launch: {name} ----\n".encode())
    log_file.flush()  # a log gathers every launch of the run: each begins with this line
    popen: Process
    if python is None:
        opened = [fd for sibling in siblings for fd in sibling.descriptors()]
        popen = fork_vfl(args, log_file, env, pipe_stdout=events, siblings=opened)
    else:
        stdout: IO[bytes] | int = subprocess.PIPE if events else log_file
        command = [python, "-m", ENTRY, *args]
        popen = subprocess.Popen(
            command, stdout=stdout, stderr=log_file, env=env, start_new_session=True
        )
    log.debug("started %s (pid %d), log %s", name, popen.pid, log_path)
    return Child(name, popen, log_path, log_file, log_start=log_file.tell())


def relay(process: Child, progress: Progress) -> None:
    """Show the events of ``process``'s standard output with ``progress``, from a thread.

    Started after the last process of the launch (no thread may run while one is forked).
    """
    assert process.popen.stdout is not None
    process.relay = threading.Thread(
        target=relay_events,
        args=(process.popen.stdout, process.log_file, progress),
        name=f"relay-{process.name}",
        daemon=True,
    )
    process.relay.start()


def relay_events(source: IO[bytes], log_file: IO[bytes], progress: Progress) -> None:
    """Show each event of ``source`` with ``progress`` (and in the log); copy other lines."""
    logged = Terminal(bar=False, stream=TextLog(log_file))
    shown = Fanout(progress, logged)
    for raw in iter(source.readline, b""):
        line = raw.decode(errors="replace")
        if replay(line.rstrip("\n"), shown):
            continue
        log_file.write(raw)
        log_file.flush()
        sys.stdout.write(line)
        sys.stdout.flush()


class TextLog:
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


def await_port(port_file: Path, server: Child, timeout_s: float, stop: LaunchStop) -> int:
    """The server's port once it listens; 0 if a signal stopped it first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        port = read_port(port_file)
        if port is not None:
            return port
        if server.popen.poll() is not None:
            if stop.reason:
                return 0
            raise failure(server)
        time.sleep(POLL_S)
    raise failure(server, f"did not start listening within {timeout_s:g} s")


def supervise(processes: list[Child], stop: LaunchStop) -> None:
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
                raise failure(process)
        if not running or stop.at_once:
            return
        time.sleep(POLL_S)


def stop_all(processes: list[Child]) -> None:
    """Stop every process still running (SIGTERM, then SIGKILL to it and what it started)."""
    for process in processes:
        if process.popen.poll() is None:
            process.popen.terminate()
    for process in processes:
        try:
            process.popen.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            kill_group(process.popen)  # still running: its group cannot be another's yet
            process.popen.wait()
        if process.relay is not None:
            process.relay.join(timeout=10)
        process.log_file.close()


def failure(process: Child, what: str = "") -> ProtocolError:
    """``process`` failed: what it wrote to its log in this launch (its end) says why."""
    status = process.popen.poll()
    reason = what or f"exited with status {status}"
    with process.log_path.open("rb") as handle:
        handle.seek(process.log_start)
        written = handle.read().decode(errors="replace")
    lines = written.splitlines()[-LOG_TAIL_LINES:]
    tail = "\n".join(f"    {line}" for line in lines)
    return ProtocolError(f"{process.name} {reason}; end of {process.log_path}:\n{tail}")
