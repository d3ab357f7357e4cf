"""The server's set-up, shown as it happens and timed for ``summary.json``.

``vfl server`` (and ``vfl launch``, which shows its server's reports) notes each phase when it
begins or ends: listening, each party connected, PSI begun and done with its counts and time,
the parties set up. The seconds each phase took go to ``summary.json`` as ``setup``, beside the
training time (``wall_time``):

- ``start_s``: from the process's start to listening (imports, TLS files, the labels table);
  for a server that ``vfl launch`` forked, from the launch's start (its imports came first);
- ``connect_s``: from listening until every party is connected;
- ``psi_s``: aligning the IDs (private set intersection; 0 when a resumed run reloads them);
- ``parties_setup_s``: the parties building (or restoring) their roles;
- ``total_s``: all of these.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence, Sized

from vfl.deploy.alignment import Alignment
from vfl.deploy.data import SPLITS
from vfl.run.console import forked_by_launch, own_age, process_age
from vfl.run.progress import Progress
from vfl.transport.grpc_transport import REPORT_EVERY_S, GrpcTransport
from vfl.transport.link import PartyUnavailableError

log = logging.getLogger(__name__)

POLL_S = 0.2
"""How often the wait for parties looks for new connections."""


class SetupPhases:
    """Notes each set-up phase to ``progress`` and keeps its seconds.

    Args:
        progress: Where the notes go.
        started: ``time.monotonic()`` when the process started (default: ``process_age``).

    Attributes:
        doing: What the server is doing now, for a message if it is stopped there.
        seconds: Each finished phase's seconds (``start_s``, ``connect_s``, ...).
    """

    def __init__(self, progress: Progress | None = None, started: float | None = None) -> None:
        self.progress = progress or Progress()
        self._mark = time.monotonic() - process_age() if started is None else started
        self.doing = "starting"
        self.seconds: dict[str, float] = {}

    def _lap(self, name: str) -> float:
        now = time.monotonic()
        self.seconds[f"{name}_s"] = seconds = now - self._mark
        self._mark = now
        return seconds

    def listening(self, port: int, parties: Sequence[int]) -> None:
        """The server listens; the wait for ``parties`` begins."""
        seconds = self._lap("start")
        self.doing = f"waiting for parties {_names(parties)} to connect"
        started = f"{seconds:.1f} s to start"
        if forked_by_launch():
            started = f"{own_age():.1f} s after its fork, {seconds:.1f} s after the launch began"
        self.progress.note(f"server listening on port {port} ({started})")

    def await_parties(self, transport: GrpcTransport, timeout: float) -> None:
        """Wait for every party to connect (as ``transport.wait_for_parties``), noting each.

        Every ``REPORT_EVERY_S`` seconds it logs the parties it still waits for.

        Raises:
            PartyUnavailableError: naming the parties still missing after ``timeout`` seconds.
        """
        started = time.monotonic()
        deadline, report_at = started + timeout, started + REPORT_EVERY_S
        seen: list[int] = []
        while True:
            for party in sorted(set(transport.connected()) - set(seen)):
                seen.append(party)
                self.progress.note(
                    f"party {party} connected ({len(seen)} of {len(transport.party_ids)})"
                )
            missing = [p for p in transport.party_ids if p not in seen]
            self.doing = f"waiting for parties {_names(missing)} to connect"
            now = time.monotonic()
            if not missing:
                break
            if now >= deadline:
                raise PartyUnavailableError(
                    f"parties {missing} did not connect within {timeout:g} s"
                    f" ({transport.absences(missing)})"
                )
            if now >= report_at:
                report_at += REPORT_EVERY_S
                log.warning(
                    "waiting for parties %s (%s); giving up in %.0f s",
                    missing,
                    transport.absences(missing),
                    deadline - now,
                )
            transport.streams.wait_for_parties(min(POLL_S, deadline - now))
        self._lap("connect")

    def psi_begins(self, ids: Mapping[int, Sized], parties: int) -> None:
        """The alignment of ``ids`` (per split) with ``parties`` parties begins."""
        counts = " and ".join(f"{len(ids[split])} {SPLITS[split]}" for split in ids)
        self.doing = "aligning the IDs (PSI)"
        self.progress.note(f"PSI: aligning {counts} IDs with {parties} parties")

    def psi_ends(self, alignment: Alignment, ids: Mapping[int, Sized]) -> None:
        """The alignment is done: how many IDs of each split every party holds."""
        seconds = self._lap("psi")
        counts = ", ".join(
            f"{SPLITS[split]} {len(alignment.rows[split])} of {len(ids[split])}" for split in ids
        )
        self.progress.note(f"PSI done in {seconds:.1f} s: IDs every party holds: {counts}")

    def psi_reloaded(self) -> None:
        """A resumed run reloaded its alignment: no PSI."""
        self.seconds["psi_s"] = 0.0
        self._lap("reload")
        self.seconds.pop("reload_s")

    def parties_begin(self, restore_round: int) -> None:
        """The parties are asked to build (``restore_round`` < 0) or restore their roles."""
        how = "set up" if restore_round < 0 else f"restored at round {restore_round}"
        self.doing = f"waiting for the parties to be {how}"

    def parties_ready(self, epochs: int, rounds: int, rounds_done: int = 0) -> None:
        """Every party built (or restored) its role; training to ``epochs`` epochs begins.

        ``rounds``: per epoch; ``rounds_done``: the rounds a resumed run has behind it.
        """
        seconds = self._lap("parties_setup")
        self.doing = "training"
        total = sum(self.seconds.values())
        self.progress.note(
            f"parties set up ({seconds:.1f} s); set-up took {total:.1f} s; "
            + _training(epochs, rounds, rounds_done)
        )

    def holders_ready(self, trees: int) -> None:
        """Every party holds its SecureBoost columns; growing ``trees`` trees begins."""
        seconds = self._lap("parties_setup")
        self.doing = "growing trees"
        total = sum(self.seconds.values())
        self.progress.note(
            f"parties set up as SecureBoost holders ({seconds:.1f} s); set-up took {total:.1f} s;"
            f" growing {trees} tree{'s' if trees != 1 else ''}"
        )

    def summary(self) -> dict[str, float]:
        """``summary.json``'s ``setup``: each phase's seconds and their total."""
        times = {name: round(value, 3) for name, value in self.seconds.items()}
        return {**times, "total_s": round(sum(self.seconds.values()), 3)}


def _names(parties: Sequence[int]) -> str:
    return ", ".join(map(str, parties))


def _training(epochs: int, rounds: int, rounds_done: int) -> str:
    """``training 5 epochs of 41 rounds``, or where a resumed run goes on and to which epoch."""
    done, position = divmod(rounds_done, rounds) if rounds else (0, 0)
    if rounds_done == 0:
        return f"training {epochs} epoch{'s' if epochs != 1 else ''} of {rounds} rounds"
    if done >= epochs:
        return (
            f"the run ended at epoch {done} already: nothing to train (to train more, resume"
            " with a larger train.epochs: --set train.epochs=N)"
        )
    start = f"round {position} of epoch {done + 1}" if position else f"epoch {done + 1}"
    return f"training from {start} to epoch {epochs} ({rounds} rounds an epoch)"
