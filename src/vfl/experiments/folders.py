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
from vfl.experiments.plan import PlannedRun, RunState, recorded_epochs, run_state

Verb = Literal["keep", "resume", "extend", "move", "create"]
VERBS: tuple[Verb, ...] = ("keep", "resume", "extend", "move", "create")
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
    """

    run: str
    state: RunState
    verb: Verb
    renames: tuple[tuple[str, str], ...] = ()

    @property
    def runs(self) -> bool:
        """Whether the run trains (everything but ``keep``)."""
        return self.verb != "keep"

    def describe(self) -> str:
        """One line, e.g. ``move     a__seed0 -> a__seed0.superseded-20250101T120000Z (...)``."""
        head = f"{self.verb:8} {self.run}"
        if self.verb == "move":
            return f"{head} -> {self.renames[0][1]} (it holds another run; runs afresh)"
        if self.verb == "extend":
            kept = ", ".join(f"{old} as {new}" for old, new in self.renames)
            return f"{head} (finished with fewer epochs; keeps {kept}, continues)"
        notes = {"keep": "finished with this config", "resume": "from its checkpoint"}
        return f"{head} ({notes[self.verb]})" if self.verb in notes else head

    def apply(self, folder: Path) -> None:
        """Do it, in the sweep folder ``folder``: move aside, keep files, or nothing."""
        run_dir = folder / self.run
        if self.verb == "move":
            os.rename(run_dir, folder / self.renames[0][1])
            return
        for old, new in self.renames:
            copy = shutil.copy2 if old == CHECKPOINT else os.rename
            copy(run_dir / old, run_dir / new)
        if self.verb in ("resume", "extend"):
            for name in (SUMMARY, ERROR):
                (run_dir / name).unlink(missing_ok=True)  # written again by the run


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
        return FolderAction(run.name, state, "keep")
    if state == "new":
        return FolderAction(run.name, state, "create")
    if state == "superseded":
        moved = _free_name(folder, f"{run.name}{SUPERSEDED}{stamp}", "")
        return FolderAction(run.name, state, "move", ((run.name, moved),))
    if not (run_dir / SUMMARY).exists():
        return FolderAction(run.name, state, "resume")
    epochs = int(recorded_epochs(run_dir))
    kept = [(SUMMARY, (f"summary.epochs{epochs}", ".json"))]
    if (run_dir / CHECKPOINT).exists():
        kept.append((CHECKPOINT, (f"checkpoint.epochs{epochs}", ".pt")))
    renames = tuple((old, _free_name(run_dir, *new)) for old, new in kept)
    return FolderAction(run.name, state, "extend", renames)


def _free_name(folder: Path, stem: str, suffix: str) -> str:
    """``stem + suffix``, or ``stem-2 + suffix``, ``stem-3 + suffix``, ... if it is taken."""
    candidate, number = stem + suffix, 1
    while (folder / candidate).exists():
        number += 1
        candidate = f"{stem}-{number}{suffix}"
    return candidate
