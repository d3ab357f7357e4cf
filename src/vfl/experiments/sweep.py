"""Run a sweep: skip finished runs, resume partial ones, run the rest in worker processes.

``run_sweep`` validates every run's config first, writes ``sweep.json``, moves aside every
folder that holds another run (``vfl.experiments.folders``: nothing finished is deleted), runs
what is left (in this process with one worker, else in a ``spawn`` process pool with
``torch.set_num_threads(max(1, cores // workers))`` in each worker, or as Ray tasks with
``vfl.experiments.ray_executor``), then writes the reports. A failing run leaves its traceback in
``error.txt`` and does not stop the others.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from tqdm import tqdm

from vfl.experiments.files import ERROR, Manifest, SettingEntry, write_manifest
from vfl.experiments.folders import VERBS, FolderAction, plan_folders
from vfl.experiments.plan import PlannedRun, RunState, plan
from vfl.experiments.pool import Stopped, execute, refuse_inside_worker_start
from vfl.experiments.report import write_sweep_report
from vfl.experiments.spec import SweepSpec
from vfl.experiments.tasks import RunOutcome, RunTask, cores

if TYPE_CHECKING:
    from vfl.experiments.ray_executor import RayOptions, RaySession

__all__ = [
    "RunOutcome",
    "RunTask",
    "SweepResult",
    "SweepStopped",
    "execute",
    "manifest_of",
    "run_sweep",
]


@dataclass(frozen=True)
class SweepResult:
    """What ``run_sweep`` did.

    Attributes:
        folder: The sweep folder.
        actions: What happened (or, in a dry run, would happen) to each run's folder.
        outcomes: One outcome per run that ran, in order of completion.
        reports: The report files written (tables, CSVs, plots).
    """

    folder: Path
    actions: dict[str, FolderAction]
    outcomes: tuple[RunOutcome, ...] = ()
    reports: tuple[Path, ...] = ()

    @property
    def states(self) -> dict[str, RunState]:
        """Each run's state before the sweep ran (``done`` runs were skipped)."""
        return {name: action.state for name, action in self.actions.items()}

    @property
    def failed(self) -> list[RunOutcome]:
        """The runs that raised an error."""
        return [o for o in self.outcomes if not o.ok and not o.stopped]

    @property
    def stopped(self) -> list[RunOutcome]:
        """The runs a signal stopped after a round (a later sweep resumes them)."""
        return [o for o in self.outcomes if o.stopped]

    def summary(self) -> dict[str, Any]:
        """What ``vfl sweep --json`` prints: the folder, each run that ran, the reports."""
        return {
            "folder": str(self.folder),
            "runs": len(self.actions),
            "skipped": sorted(n for n, a in self.actions.items() if not a.trains),
            "outcomes": [
                {
                    "name": o.name,
                    "ok": o.ok,
                    "stopped": o.stopped,
                    "seconds": round(o.seconds, 3),
                    "final": o.final,
                    "error": o.error,
                }
                for o in self.outcomes
            ],
            "reports": [str(path) for path in self.reports],
        }

    def line(self) -> str:
        """One line: ``sweep NAME: 8 runs, 6 ok, 2 done before; tables and plots in FOLDER``."""
        counts = [f"{len(self.actions)} runs", f"{sum(o.ok for o in self.outcomes)} ok"]
        if self.failed:
            counts.append(f"{len(self.failed)} FAILED")
        skipped = sum(not a.trains for a in self.actions.values())
        if skipped:
            counts.append(f"{skipped} done before")
        return f"sweep {self.folder.name}: {', '.join(counts)}; tables and plots in {self.folder}"


class SweepStopped(KeyboardInterrupt):
    """A signal stopped the sweep; runs that were training stopped after a round.

    Attributes:
        reason: The signal's name.
        result: What finished before, and the runs that stopped with a checkpoint.
    """

    def __init__(self, reason: str, result: SweepResult) -> None:
        super().__init__(reason)
        self.reason, self.result = reason, result


def run_sweep(
    spec: SweepSpec,
    *,
    workers: int | None = None,
    dry_run: bool = False,
    log: TextIO = sys.stderr,
    ray: RayOptions | None = None,
    bar: bool = False,
) -> SweepResult:
    """Run every unfinished run of ``spec`` and write the sweep's tables and plots.

    Args:
        spec: The validated sweep file.
        workers: Parallel worker processes (default: the sweep file's ``workers``).
        dry_run: Only print what would happen to each run's folder (keep, resume, extend, move
            aside to a named folder, create); run nothing and write nothing.
        log: Where the progress lines go.
        ray: Run each run as a Ray task with these options instead of in the local pool
            (``vfl.experiments.ray_executor``; ``workers`` then sizes only a Ray instance
            started on this machine). The run folders are written the same way.
        bar: Also show a bar of the runs done on ``log``, if it is a terminal.

    Raises:
        SweepStopped: if SIGINT or SIGTERM stopped it (the runs in training stop after a
            round, with a checkpoint; no report is written).
        ConfigError: if any run's config is invalid, or the Ray cluster cannot be reached
            (before anything is written).
        ModuleNotFoundError: if ``ray`` is given and Ray is not installed (before anything is
            written).
        SystemExit: in a pool worker that reached it while importing an unguarded script.
    """
    refuse_inside_worker_start()
    runs = plan(spec)
    folder = spec.folder
    actions = plan_folders(folder, runs)
    pending = [run for run in runs if actions[run.name].trains]
    workers = max(1, min(workers or spec.workers, len(pending)))
    # Ray first: a cluster (or Ray itself) that is missing fails before the sweep says anything
    connect = ray is not None and pending and not dry_run
    session = _connect(ray, workers, log) if connect and ray is not None else None
    counts = ", ".join(f"{sum(a.verb == v for a in actions.values())} {v}" for v in VERBS)
    print(f"sweep {spec.name}: {len(runs)} runs ({counts}) in {folder}", file=log)
    for action in actions.values():
        if dry_run or action.verb in ("move", "extend"):
            print(f"  {action.describe()}", file=log)
    if dry_run:
        return SweepResult(folder, actions)
    try:
        write_manifest(folder, manifest_of(spec, runs))
        threads = max(1, cores() // workers) if workers > 1 else 0
        tasks = [_prepare(folder, run, actions[run.name], threads) for run in pending]
        progress = _Progress(len(tasks), spec.metric, log, bar=bar)
        try:
            if session is None or ray is None:
                outcomes = execute(tasks, workers=workers, on_done=progress)
            else:
                outcomes = _execute_on_ray(session, tasks, ray, progress)
        except Stopped as stopped:
            partial = SweepResult(folder, actions, tuple(stopped.outcomes))
            raise SweepStopped(stopped.reason, partial) from None
        finally:
            progress.close()
    finally:
        if session is not None:
            session.close()
    reports = write_sweep_report(folder)
    print(f"tables and plots in {folder}", file=log)
    return SweepResult(folder, actions, tuple(outcomes), tuple(reports))


def manifest_of(spec: SweepSpec, runs: Sequence[PlannedRun]) -> Manifest:
    """The ``sweep.json`` contents for the planned ``runs`` of ``spec``."""
    settings: dict[str, list[PlannedRun]] = {}
    for run in runs:
        settings.setdefault(run.setting.name, []).append(run)
    return Manifest(
        name=spec.name,
        metric=spec.metric,
        log_x=spec.report.log_x,
        target=None if spec.target is None else (spec.target.metric, spec.target.value),
        label_keys=spec.report.label or tuple(key for key, _ in spec.grid),
        settings=tuple(
            SettingEntry(
                label=group[0].setting.label,
                name=group[0].setting.name,
                overrides=dict(group[0].setting.overrides),
                runs=tuple((run.seed, run.name) for run in group),
            )
            for group in settings.values()
        ),
    )


def _connect(options: RayOptions, workers: int, log: TextIO) -> RaySession:
    from vfl.experiments.ray_executor import RaySession  # deferred: Ray is an optional extra

    return RaySession.connect(options, workers=workers, log=log)


def _execute_on_ray(
    session: RaySession,
    tasks: Sequence[RunTask],
    options: RayOptions,
    on_done: Callable[[RunOutcome], None],
) -> list[RunOutcome]:
    from vfl.experiments.ray_executor import execute_on_ray

    return execute_on_ray(session, tasks, options=options, on_done=on_done)


def _prepare(folder: Path, run: PlannedRun, action: FolderAction, threads: int) -> RunTask:
    action.apply(folder)
    resume = action.state == "partial"
    return RunTask(run.name, folder / run.name, run.config, resume=resume, threads=threads)


class _Progress:
    """Prints one line per finished run: ``[3/8] ok name (1.2 s) test_accuracy 0.8512``.

    With ``bar`` and a terminal for ``log``, a bar of the runs done stays below the lines.
    """

    def __init__(self, total: int, metric: str, log: TextIO, *, bar: bool = False) -> None:
        self._total, self._metric, self._log = total, metric, log
        self._finished = 0
        self._bar = tqdm(
            total=total, desc="runs", unit="run", file=log, disable=None if bar else True
        )

    def __call__(self, outcome: RunOutcome) -> None:
        self._finished += 1
        head = f"[{self._finished}/{self._total}]"
        if outcome.ok:
            value = outcome.final.get(self._metric)
            shown = f" {self._metric} {value:.4f}" if value is not None else ""
            line = f"{head} ok     {outcome.name} ({outcome.seconds:.1f} s){shown}"
        elif outcome.stopped:
            line = f"{head} STOPPED {outcome.name}: {outcome.error}"
        else:
            line = f"{head} FAILED {outcome.name}: {outcome.error} (traceback in {ERROR})"
        tqdm.write(line, file=self._log)
        self._log.flush()
        self._bar.update(1)

    def close(self) -> None:
        """Remove the bar."""
        self._bar.close()
