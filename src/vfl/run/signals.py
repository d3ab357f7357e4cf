"""Stop a run cleanly on SIGINT or SIGTERM: finish the round, checkpoint, exit.

The first signal only sets a ``StopRequest``; the epoch loop checks it after every round, writes
a checkpoint and stops (``fit`` raises ``RunStopped``). A second Ctrl-C interrupts at once
(``KeyboardInterrupt``), a second SIGTERM terminates the process, for a round that hangs.

While ``StopRequest.at_once`` is set (a deployment's set-up: waiting for parties, PSI), there is
no round to finish: the first signal raises ``Interrupted`` at once, which names the signal.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from vfl.errors import VflError

HANDLED = (signal.SIGINT, signal.SIGTERM)


class RunStopped(VflError):
    """Training stopped early on request (a signal), after writing a checkpoint if it could.

    Attributes:
        rounds: Rounds completed.
        checkpointed: Whether the run directory's checkpoint holds the run at ``rounds``.
        reason: What asked for the stop (``SIGINT``, ``SIGTERM``).
    """

    def __init__(self, message: str, *, rounds: int, checkpointed: bool, reason: str = "") -> None:
        super().__init__(message)
        self.rounds = rounds
        self.checkpointed = checkpointed
        self.reason = reason


class Interrupted(KeyboardInterrupt):
    """A signal stopped the work where it was (``StopRequest.at_once``).

    Attributes:
        reason: The signal's name (``SIGINT``, ``SIGTERM``).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class StopRequest:
    """Whether, and why, training should stop at the next round boundary.

    Attributes:
        reason: The signal that asked for the stop, or None.
        at_once: A signal raises ``Interrupted`` at once instead (no round to finish).
    """

    def __init__(self, *, at_once: bool = False) -> None:
        self.reason: str | None = None
        self.at_once = at_once

    @property
    def requested(self) -> bool:
        """Whether a stop was requested."""
        return self.reason is not None

    def request(self, reason: str) -> None:
        """Ask training to stop after the current round; ``reason`` says why (``SIGINT``)."""
        self.reason = reason


@contextmanager
def stop_on_signals(*, at_once: bool = False) -> Iterator[StopRequest]:
    """SIGINT and SIGTERM request a stop while the context is open (main thread only).

    Elsewhere (signal handlers can only be set from the main thread) the request never fires
    and signals keep their usual effect. The previous handlers come back on exit. ``at_once``
    starts the request with ``at_once`` set.
    """
    stop = StopRequest(at_once=at_once)
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {number: signal.getsignal(number) for number in HANDLED}

    def handle(number: int, frame: FrameType | None) -> None:
        name = signal.Signals(number).name
        if stop.at_once:
            raise Interrupted(name)
        stop.request(name)
        # A second signal of the same kind acts at once: the usual behaviour comes back.
        interrupt = number == signal.SIGINT
        signal.signal(number, signal.default_int_handler if interrupt else signal.SIG_DFL)
        again = "Ctrl-C" if interrupt else name
        # os.write, not print: a handler may run while the same stream is being written.
        note = f"\nvfl: {name}: stopping after this round ({again} again to stop at once)\n"
        os.write(2, note.encode())

    try:
        for number in HANDLED:
            signal.signal(number, handle)
        yield stop
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)


def exit_status(stopped: BaseException) -> int:
    """The exit status of a command a signal stopped: the shell's 128 + the signal's number.

    130 for Ctrl-C (SIGINT), 143 for SIGTERM; 130 where the signal is not known (a
    ``KeyboardInterrupt`` raised by Python's own SIGINT handler).
    """
    reason = getattr(stopped, "reason", "") or "SIGINT"
    try:
        return 128 + int(signal.Signals[reason])
    except KeyError:
        return 128 + int(signal.SIGINT)
