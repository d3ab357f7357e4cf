"""Stop a run cleanly on SIGINT or SIGTERM: finish the round, checkpoint, exit.

The first signal only sets a ``StopRequest``; the epoch loop checks it after every round, writes
a checkpoint and stops (``fit`` raises ``RunStopped``). A second Ctrl-C interrupts at once
(``KeyboardInterrupt``), a second SIGTERM terminates the process, for a round that hangs.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

HANDLED = (signal.SIGINT, signal.SIGTERM)


class StopRequest:
    """Whether, and why, training should stop at the next round boundary."""

    def __init__(self) -> None:
        self.reason: str | None = None

    @property
    def requested(self) -> bool:
        """Whether a stop was requested."""
        return self.reason is not None

    def request(self, reason: str) -> None:
        """Ask training to stop after the current round; ``reason`` says why (``SIGINT``)."""
        self.reason = reason


@contextmanager
def stop_on_signals() -> Iterator[StopRequest]:
    """SIGINT and SIGTERM request a stop while the context is open (main thread only).

    Elsewhere (signal handlers can only be set from the main thread) the request never fires
    and signals keep their usual effect. The previous handlers come back on exit.
    """
    stop = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {number: signal.getsignal(number) for number in HANDLED}

    def handle(number: int, frame: FrameType | None) -> None:
        name = signal.Signals(number).name
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
