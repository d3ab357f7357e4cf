"""``vfl`` processes forked from one interpreter that has already imported what they all import.

Every process of ``vfl launch`` (the server and each party) is a ``vfl`` command that imports
torch, numpy, pandas, gRPC and vfl's deployment modules: about 1.6 s of CPU each before it does
any work. (Not ``torch._dynamo``, sympy or numba, another second: vfl's optimizers, its backward
pass and its small messages keep them out; ``vfl.models.eager_optim``, ``vfl.roles.local``,
``vfl.wire.bitpack_kernels``.) On one
machine these imports are the same in every process, so the launcher imports them once
(``preload``) and forks each process from itself, as PyTorch's ``DataLoader`` forks its workers:
the children share the imported modules' memory until they write to it and start at once.

A forked child is still a process of its own: its own session (as ``start_new_session``), its own
log file as standard error, its own environment, signals at their defaults until its command
installs its own, and ``vfl.cli`` run as ``__main__`` on its arguments, exactly as
``python -m vfl.cli`` runs it (the module is named, not imported, as in the command line).
The launcher imports gRPC but never makes a channel or a server: gRPC starts its threads and
its polling when the first of those is made, so each child starts gRPC afresh (the "use after
fork" of gRPC's fork support notes). No Python thread of the launcher runs at a fork (it
starts its reading thread after its last fork).

Only where ``fork`` is the platform's way to start processes (Linux), the processes use this
interpreter and the launch runs on the CPU (``vfl.deploy.launch``); elsewhere ``vfl launch``
starts them with ``subprocess``.
"""

from __future__ import annotations

import logging
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Sequence
from typing import IO, NoReturn

from vfl.run.collector import imports_frozen

ENTRY = "vfl.cli"
"""The module a process runs as ``__main__``, as ``python -m vfl.cli`` does (``vfl launch``'s
processes without a fork)."""

PRELOAD = (
    "torch",
    "torch.optim",
    "pandas",
    "vfl.deploy.commands",
    "vfl.deploy.phases",
    "vfl.deploy.party",
    "vfl.deploy.server",
)
"""What every process of a launch imports before it can work. Not ``ENTRY`` itself: each child
runs it afresh as ``__main__`` (a module run so must not be imported yet), which is quick."""


def can_fork(python: str) -> bool:
    """Whether the processes can be forked from this interpreter (Linux, the same interpreter)."""
    return sys.platform == "linux" and os.path.realpath(python) == os.path.realpath(sys.executable)


def preload() -> None:
    """Import ``PRELOAD`` here, once, for every process forked next.

    The garbage collector is off while they import, and what they made is then frozen
    (``vfl.run.collector``, as Python's documentation advises before a fork): the imports' own
    collections would walk torch's objects again and again (0.4 s of 1.9 s), and each child's
    collections would walk them too, writing to the memory pages it shares with the launcher.

    Raises:
        RuntimeError: if a thread runs in this process (a fork would copy what it holds half
            way); the launch then starts its processes with ``subprocess`` instead.
    """
    with imports_frozen():
        for name in PRELOAD:
            __import__(name)  # the import statement's path, which `-X importtime` reports
    _check_single_thread()


def _check_single_thread() -> None:
    if threading.active_count() > 1:
        names = ", ".join(thread.name for thread in threading.enumerate())
        raise RuntimeError(f"threads run in the launcher ({names}); a fork would copy them")


class ForkedProcess:
    """A forked ``vfl`` command, with what the launcher uses of ``subprocess.Popen``'s interface.

    Attributes:
        pid: Its process ID.
        stdout: The read end of its standard output, if it was asked for one.
        returncode: Its exit status once it ended (``-N`` for signal ``N``), else ``None``.
    """

    def __init__(self, pid: int, stdout: IO[bytes] | None) -> None:
        self.pid = pid
        self.stdout = stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """Its exit status if it has ended, without waiting."""
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Its exit status once it has ended.

        Raises:
            subprocess.TimeoutExpired: if it is still running after ``timeout`` seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while (status := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"vfl (pid {self.pid})", timeout or 0.0)
            time.sleep(0.02)
        return status

    def send_signal(self, number: int) -> None:
        """Send it signal ``number`` unless it has ended."""
        if self.poll() is None:
            os.kill(self.pid, number)

    def terminate(self) -> None:
        """SIGTERM."""
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL."""
        self.send_signal(signal.SIGKILL)


def fork_vfl(
    args: Sequence[str],
    stderr: IO[bytes],
    env: dict[str, str],
    *,
    pipe_stdout: bool,
    siblings: Sequence[int] = (),
) -> ForkedProcess:
    """Fork and run ``vfl ARGS`` in the child, with ``env`` as its environment.

    Its standard error goes to ``stderr``, its standard output to a pipe (``pipe_stdout``) or to
    ``stderr`` too. ``siblings``: descriptors the launcher opened for other processes (their logs
    and pipes), closed in the child (a pipe's reader sees its end only once no child holds it).

    Raises:
        RuntimeError: if another thread runs in this process (nothing is forked).
    """
    from vfl.run.console import process_age

    _check_single_thread()
    started = time.monotonic() - process_age()
    read_end, write_end = os.pipe() if pipe_stdout else (-1, stderr.fileno())
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; its work is checked through what it writes
        _run_child(list(args), write_end, stderr.fileno(), env, siblings, started)
    if pipe_stdout:
        os.close(write_end)
        return ForkedProcess(pid, os.fdopen(read_end, "rb"))
    return ForkedProcess(pid, None)


def _run_child(
    args: list[str],
    stdout: int,
    stderr: int,
    env: dict[str, str],
    siblings: Sequence[int],
    started: float,
) -> NoReturn:
    status = 1
    try:
        os.setsid()
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, signal.SIG_DFL)
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        for descriptor in {*siblings, stdout, stderr} - {1, 2}:
            os.close(descriptor)
        os.environ.clear()
        os.environ.update(env)
        # New streams on descriptors 1 and 2 (the launcher's may be another object, a test's
        # capture say), written through as PYTHONUNBUFFERED would.
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(  # noqa: SIM115
            2, "w", buffering=1, closefd=False, errors="backslashreplace"
        )
        for stream in (sys.stdout, sys.stderr):
            stream.reconfigure(write_through=True)
        _reset_logging()
        _set_threads(env)
        from vfl.run.console import count_age_from

        count_age_from(started)
        sys.argv = [ENTRY, *args]
        sys.modules.pop(ENTRY, None)  # the launcher's own command runs it; here it runs afresh
        runpy.run_module(ENTRY, run_name="__main__", alter_sys=True)  # as `python -m vfl.cli`
        status = 0
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        try:  # what the command logged and printed; not the launcher's exit handlers
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)


def _reset_logging() -> None:
    """The launcher's handlers and warning display off: the command sets up its own."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    warnings.showwarning = warnings._showwarning_orig  # type: ignore[attr-defined]


def _set_threads(env: dict[str, str]) -> None:
    """Torch's thread pool as ``OMP_NUM_THREADS`` says (read at import, which came earlier)."""
    threads = env.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:
        import torch

        torch.set_num_threads(int(threads))
