"""What a training command shows while it works: phase notes, a bar per epoch, a line per epoch.

Every command that trains reports through one ``Progress``:

- ``Progress`` itself shows nothing (``--quiet``, or a library call that asked for silence);
- ``Terminal`` writes notes and epoch lines to standard error and, on a terminal, a tqdm bar of
  the epoch's rounds with their rate and running loss (``output.progress``);
- ``Events`` writes the same reports as JSON lines, for a process whose output another process
  shows (``vfl launch`` renders its server's events with ``replay``).

Standard output is left to the command's result (``vfl.run.console.show_result``).
"""

from __future__ import annotations

import json
import math
import sys
import time
from enum import StrEnum
from typing import IO, Any, Protocol

from tqdm import tqdm

EVENT_KEY = "vfl_event"
"""The key that marks a line of standard output as a progress event (``Events``)."""
EVENTS_EVERY_S = 0.25
"""How often ``Events`` reports rounds within an epoch (each epoch's last round always)."""


class EventKind(StrEnum):
    """What an ``Events`` line reports; ``replay`` reads the same names in the other process."""

    NOTE = "note"
    EPOCH_BEGINS = "epoch_begins"
    ROUNDS = "rounds"
    EPOCH_ENDS = "epoch_ends"


class TextSink(Protocol):
    """Where ``Terminal`` writes: a text stream (standard error, a log file)."""

    def write(self, text: str, /) -> int:
        """Write ``text``."""
        ...

    def flush(self) -> None:
        """Pass on what was written."""
        ...

    def isatty(self) -> bool:
        """Whether it is a terminal (a bar is drawn only there)."""
        ...


class Progress:
    """Reports of a training command; this base class shows nothing."""

    def note(self, text: str) -> None:
        """A phase of the work began or ended (``PSI done in 9.1 s``)."""

    def epoch_begins(self, epoch: int, epochs: int, rounds: int, done: int = 0) -> None:
        """Epoch ``epoch`` (0-based) of ``epochs`` starts, ``done`` of its ``rounds`` done."""

    def round_ends(self, loss: float) -> None:
        """One more round of the current epoch ended with training loss ``loss``."""

    def rounds_done(self, done: int, loss: float) -> None:
        """``done`` rounds of the current epoch have ended, with running loss ``loss``."""

    def epoch_ends(self, line: str) -> None:
        """The current epoch ended and was evaluated; ``line`` describes it (``describe``)."""


class Terminal(Progress):
    """Notes and epoch lines on ``stream`` (standard error), and a bar of each epoch's rounds.

    Args:
        bar: Show a tqdm bar of the rounds, when ``stream`` is a terminal.
        lines: Show notes and epoch lines.
        stream: Where (default: standard error at the time of each write).
        clock: Notes start with the seconds since this ``time.monotonic()`` value, if given.
    """

    def __init__(
        self,
        *,
        bar: bool = True,
        lines: bool = True,
        stream: TextSink | None = None,
        clock: float | None = None,
    ) -> None:
        self.bar, self.lines, self._stream, self.clock = bar, lines, stream, clock
        self._rounds: RoundBar | None = None
        # tqdm makes its write lock at its first write, importing multiprocessing for it: a
        # Ctrl-C arriving during that import (a server's first note, "listening") left tqdm
        # without its lock, and the stop became an internal error. Made here, before any
        # command installs its signal handlers.
        tqdm.get_lock()  # type: ignore[no-untyped-call]

    @property
    def stream(self) -> TextSink:
        """Where the reports go."""
        return self._stream or sys.stderr

    def note(self, text: str) -> None:
        """Write ``text`` on its own line, after the seconds since ``clock``."""
        if self.lines:
            stamp = "" if self.clock is None else f"{time.monotonic() - self.clock:7.1f} s  "
            self._write(stamp + text)

    def epoch_begins(self, epoch: int, epochs: int, rounds: int, done: int = 0) -> None:
        """Open the epoch's bar."""
        self._close_bar()
        if self.bar:
            self._rounds = RoundBar(epoch, epochs, rounds, stream=self.stream, done=done)

    def round_ends(self, loss: float) -> None:
        """Move the bar."""
        if self._rounds is not None:
            self._rounds(loss)

    def rounds_done(self, done: int, loss: float) -> None:
        """Move the bar to ``done`` rounds."""
        if self._rounds is not None:
            self._rounds.advance_to(done, loss)

    def epoch_ends(self, line: str) -> None:
        """Close the bar, then write ``line``."""
        self._close_bar()
        if self.lines:
            self._write(line)

    def _close_bar(self) -> None:
        if self._rounds is not None:
            self._rounds.close()
            self._rounds = None

    def _write(self, text: str) -> None:
        tqdm.write(text, file=self.stream)  # above an open bar, if any
        self.stream.flush()


class Events(Progress):
    """Every report as one JSON line on ``stream``, for ``replay`` in another process.

    Rounds are reported at most every ``EVENTS_EVERY_S`` seconds, with how many are done.
    """

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream
        self._done, self._loss, self._sent_at = 0, math.nan, 0.0
        self._rounds = 0

    def note(self, text: str) -> None:
        """Send the note."""
        self._send(EventKind.NOTE, text=text)

    def epoch_begins(self, epoch: int, epochs: int, rounds: int, done: int = 0) -> None:
        """Send the epoch's start."""
        self._done, self._rounds, self._loss = done, rounds, math.nan
        self._send(EventKind.EPOCH_BEGINS, epoch=epoch, epochs=epochs, rounds=rounds, done=done)

    def round_ends(self, loss: float) -> None:
        """Count the round; send the count now and then."""
        running = loss if math.isnan(self._loss) else 0.9 * self._loss + 0.1 * loss
        self.rounds_done(self._done + 1, running)

    def rounds_done(self, done: int, loss: float) -> None:
        """Send the count of rounds done now and then, and at the epoch's last round."""
        self._done, self._loss = done, loss
        now = time.monotonic()
        if now - self._sent_at >= EVENTS_EVERY_S or self._done == self._rounds:
            self._sent_at = now
            self._send(EventKind.ROUNDS, done=self._done, loss=self._loss)

    def epoch_ends(self, line: str) -> None:
        """Send the epoch's line."""
        self._send(EventKind.EPOCH_ENDS, line=line)

    def _send(self, kind: EventKind, **fields: Any) -> None:
        stream = self._stream or sys.stdout
        stream.write(json.dumps({EVENT_KEY: kind, **fields}) + "\n")
        stream.flush()


def replay(line: str, progress: Progress) -> bool:
    """Report the event ``line`` (written by ``Events``) to ``progress``.

    Returns:
        Whether ``line`` was an event (else the caller shows it as it is).
    """
    if not line.startswith("{") or EVENT_KEY not in line:
        return False
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return False
    kind = event.get(EVENT_KEY) if isinstance(event, dict) else None
    if kind == EventKind.NOTE:
        progress.note(str(event["text"]))
    elif kind == EventKind.EPOCH_BEGINS:
        progress.epoch_begins(event["epoch"], event["epochs"], event["rounds"], event["done"])
    elif kind == EventKind.ROUNDS:
        progress.rounds_done(int(event["done"]), float(event["loss"]))
    elif kind == EventKind.EPOCH_ENDS:
        progress.epoch_ends(str(event["line"]))
    return kind is not None


class Fanout(Progress):
    """Every report to each of several ``Progress`` (the terminal and a log file)."""

    def __init__(self, *targets: Progress) -> None:
        self.targets = targets

    def note(self, text: str) -> None:
        """To each."""
        for target in self.targets:
            target.note(text)

    def epoch_begins(self, epoch: int, epochs: int, rounds: int, done: int = 0) -> None:
        """To each."""
        for target in self.targets:
            target.epoch_begins(epoch, epochs, rounds, done)

    def round_ends(self, loss: float) -> None:
        """To each."""
        for target in self.targets:
            target.round_ends(loss)

    def rounds_done(self, done: int, loss: float) -> None:
        """To each."""
        for target in self.targets:
            target.rounds_done(done, loss)

    def epoch_ends(self, line: str) -> None:
        """To each."""
        for target in self.targets:
            target.epoch_ends(line)


class RoundBar:
    """A tqdm bar over one epoch's rounds that shows the rate and the running loss.

    Args:
        epoch: The epoch (0-based).
        epochs: Epochs of the run.
        total: Rounds of the epoch.
        stream: Where the bar is drawn; it is drawn only if that is a terminal.
        done: Rounds already done (a resumed epoch).
    """

    def __init__(
        self, epoch: int, epochs: int, total: int, *, stream: TextSink, done: int = 0
    ) -> None:
        self._bar = tqdm(
            total=total,
            initial=done,
            desc=f"epoch {epoch + 1}/{epochs}",
            unit="round",
            leave=False,
            file=stream,
            disable=None,  # only on a terminal
            dynamic_ncols=True,
        )
        self._loss = math.nan

    def __call__(self, loss: float) -> None:
        """Count one round and its loss."""
        self._loss = loss if math.isnan(self._loss) else 0.9 * self._loss + 0.1 * loss
        self._bar.set_postfix(loss=f"{self._loss:.4f}", refresh=False)
        self._bar.update(1)

    def advance_to(self, done: int, loss: float) -> None:
        """Show ``done`` rounds and the running ``loss`` (reported from elsewhere)."""
        self._loss = loss
        self._bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
        self._bar.update(max(0, done - self._bar.n))

    def close(self) -> None:
        """Draw the bar's final state, then remove it.

        An epoch quicker than tqdm's redraw interval would otherwise show only its start.
        """
        self._bar.refresh()
        self._bar.close()
