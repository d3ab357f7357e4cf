"""What a sweep does with each run's folder before it runs: nothing finished is ever deleted.

| state | action | what happens to the folder |
|---|---|---|
| ``done`` | keep | nothing; the run is skipped |
| ``partial``, unfinished | resume | continues from its checkpoint (its old ``error.txt`` goes) |
| ``partial``, finished | extend | ``summary.json`` is renamed ``summary.epochs<E>.json`` and |
| | | ``checkpoint.pt`` copied to ``checkpoint.epochs<E>.pt``, then it continues |
| ``superseded`` | move aside | renamed ``<run>.superseded-<UTC time>``, with every file in it |
| ``new`` | create | the run writes a new folder (or its empty one, or replaces the lone |
| | | ``error.txt`` of a start that failed before writing anything) |

``plan_folders`` decides, ``describe`` says it in one line (``vfl sweep --dry-run`` prints these
lines), ``apply`` does it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from vfl.experiments.files import CHECKPOINT, ERROR, SUMMARY
from vfl.experiments.plan import (
    PlannedRun,
    RunState,
    recorded_epochs,
    run_state,
    superseded_why,
)

Verb = Literal["keep", "resume", "extend", "move", "create"]
VERBS: tuple[Verb, ...] = ("keep", "resume", "extend", "move", "create")
_FAILED_START = "replaces the error.txt of a start that failed before writing anything"
SUPERSEDED = ".superseded-"
"""Infix of a moved-aside folder's name: ``<run>.superseded-<YYYYmmddTHHMMSSZ>``."""


@dataclass(frozen=True)
class FolderAction:
    """What happens to one run's folder.

    Attributes:
        run: The run folder's name.
        state: Its state (``vfl.experiments.plan.run_state``).
        verb: ``keep``, ``resume``, ``extend``, ``move`` (aside) or ``create``.
        renames: ``(from, to)`` names: the folder moved aside (relative to the sweep folder), or
            the finished run's files an extension keeps (relative to the run folder).
        note: Why, in a few words (``describe`` shows it).
    """

    run: str
    state: RunState
    verb: Verb
    renames: tuple[tuple[str, str], ...] = ()
    note: str = ""

    @property
    def trains(self) -> bool:
        """Whether the run trains (everything but ``keep``)."""
        return self.verb != "keep"

    def describe(self) -> str:
        """One line, e.g. ``move     a__seed0 -> a__seed0.superseded-20250101T120000Z (...)``."""
        moved = f" -> {self.renames[0][1]}" if self.verb == "move" else ""
        note = f" ({self.note})" if self.note else ""
        return f"{self.verb:8} {self.run}{moved}{note}"

    def apply(self, folder: Path) -> None:
        """Do it, in the sweep folder ``folder``: move aside, keep files, or nothing."""
        run_dir = folder / self.run
        if self.verb == "move":
            os.rename(run_dir, folder / self.renames[0][1])
            return
        for old, new in self.renames:
            copy = shutil.copy2 if old == CHECKPOINT else os.rename
            copy(run_dir / old, run_dir / new)
        if self.trains:  # the run writes its own summary; an earlier error no longer applies
            for name in (SUMMARY, ERROR):
                (run_dir / name).unlink(missing_ok=True)


def plan_folders(
    folder: Path, runs: Sequence[PlannedRun], *, now: datetime | None = None
) -> dict[str, FolderAction]:
    """Each run's action, by run name; moved-aside names carry the UTC time ``now``."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return {run.name: _action(folder, run, stamp) for run in runs}


def _action(folder: Path, run: PlannedRun, stamp: str) -> FolderAction:
    run_dir = folder / run.name
    state = run_state(run_dir, run.config)
    if state == "done":
        return FolderAction(run.name, state, "keep", note="finished with this config")
    if state == "new":
        failed = (run_dir / ERROR).exists()
        return FolderAction(run.name, state, "create", note=_FAILED_START if failed else "")
    if state == "superseded":
        moved = _free_name(folder, f"{run.name}{SUPERSEDED}{stamp}", "")
        note = f"{superseded_why(run_dir, run.config)}; runs afresh"
        return FolderAction(run.name, state, "move", ((run.name, moved),), note)
    if not (run_dir / SUMMARY).exists():
        return FolderAction(run.name, state, "resume", note="from its checkpoint")
    epochs = int(recorded_epochs(run_dir))
    kept = [(SUMMARY, (f"summary.epochs{epochs}", ".json"))]
    if (run_dir / CHECKPOINT).exists():
        kept.append((CHECKPOINT, (f"checkpoint.epochs{epochs}", ".pt")))
    renames = tuple((old, _free_name(run_dir, *new)) for old, new in kept)
    shown = ", ".join(f"{old} as {new}" for old, new in renames)
    note = f"finished with fewer epochs; keeps {shown}, continues"
    return FolderAction(run.name, state, "extend", renames, note)


def _free_name(folder: Path, stem: str, suffix: str) -> str:
    """``stem + suffix``, or ``stem-2 + suffix``, ``stem-3 + suffix``, ... if it is taken."""
    candidate, number = stem + suffix, 1
    while (folder / candidate).exists():
        number += 1
        candidate = f"{stem}-{number}{suffix}"
    return candidate
