"""What ``vfl launch`` uses of a process it started, and how it kills one with its workers."""

from __future__ import annotations

import contextlib
import os
import signal
from typing import IO, Protocol


class Process(Protocol):
    """What the launch uses of a process: ``subprocess.Popen`` or a ``ForkedProcess``."""

    @property
    def pid(self) -> int:
        """Its process ID."""

    @property
    def stdout(self) -> IO[bytes] | None:
        """The read end of its standard output, if piped."""

    def poll(self) -> int | None:
        """Its exit status if it ended, without waiting."""

    def wait(self, timeout: float | None = None) -> int:
        """Its exit status once it ends (``subprocess.TimeoutExpired`` after ``timeout``)."""

    def send_signal(self, number: int) -> None:
        """Send it a signal."""

    def terminate(self) -> None:
        """SIGTERM."""

    def kill(self) -> None:
        """SIGKILL."""


def kill_group(process: Process) -> None:
    """SIGKILL to ``process`` and every process it started (its session's process group).

    A launch's processes lead sessions of their own, so their workers (SecureBoost's encryption
    pool, say) die with them instead of living on, holding the log and the output pipe.
    """
    if process.poll() is not None:  # ended and reaped: its ID may be another's by now
        return
    with contextlib.suppress(ProcessLookupError):  # ended since
        os.killpg(process.pid, signal.SIGKILL)
