"""Run a sweep: skip finished runs, resume partial ones, run the rest in worker processes.

``run_sweep`` validates every run's config first, writes ``sweep.json``, moves aside every
folder that holds another run (``vfl.experiments.folders``: nothing finished is deleted), runs
what is left (in this process with one worker, else in a ``spawn`` process pool with
``torch.set_num_threads(max(1, cores // workers))`` in each worker), then writes the reports.
A failing run leaves its traceback in ``error.txt`` and does not stop the others.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from vfl.config import RunConfig
from vfl.experiments.files import ERROR, Manifest, SettingEntry, write_manifest
from vfl.experiments.folders import VERBS, FolderAction, plan_folders
from vfl.experiments.plan import PlannedRun, RunState, plan
from vfl.experiments.report import write_sweep_report
from vfl.experiments.spec import SweepSpec


@dataclass(frozen=True)
class RunTask:
    """What a worker needs to train one run (picklable)."""

    name: str
    run_dir: Path
    config: RunConfig
    resume: bool
    threads: int = 0
    """torch intra-op threads; 0 leaves torch's default."""


@dataclass(frozen=True)
class RunOutcome:
    """How one run ended: ``ok``, its wall time, its final metrics, or the error."""

    name: str
    ok: bool
    seconds: float
    final: dict[str, float] = field(default_factory=dict)
    error: str = ""


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
        return [outcome for outcome in self.outcomes if not outcome.ok]


def run_sweep(
    spec: SweepSpec, *, workers: int | None = None, dry_run: bool = False, log: TextIO = sys.stderr
) -> SweepResult:
    """Run every unfinished run of ``spec`` and write the sweep's tables and plots.

    Args:
        spec: The validated sweep file.
        workers: Parallel worker processes (default: the sweep file's ``workers``).
        dry_run: Only print what would happen to each run's folder (keep, resume, extend, move
            aside to a named folder, create); run nothing and write nothing.
        log: Where the progress lines go.

    Raises:
        ConfigError: if any run's config is invalid (before anything runs).
    """
    runs = plan(spec)
    folder = spec.folder
    actions = plan_folders(folder, runs)
    counts = ", ".join(f"{sum(a.verb == v for a in actions.values())} {v}" for v in VERBS)
    print(f"sweep {spec.name}: {len(runs)} runs ({counts}) in {folder}", file=log)
    for action in actions.values():
        if dry_run or action.verb in ("move", "extend"):
            print(f"  {action.describe()}", file=log)
    if dry_run:
        return SweepResult(folder, actions)
    write_manifest(folder, manifest_of(spec, runs))
    pending = [run for run in runs if actions[run.name].trains]
    workers = max(1, min(workers or spec.workers, len(pending)))
    threads = max(1, _cores() // workers) if workers > 1 else 0
    tasks = [_prepare(folder, run, actions[run.name], threads) for run in pending]
    outcomes = execute(tasks, workers=workers, on_done=_Progress(len(tasks), spec.metric, log))
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


def execute(
    tasks: Sequence[RunTask], *, workers: int, on_done: Callable[[RunOutcome], None]
) -> list[RunOutcome]:
    """Run ``tasks`` (in this process if ``workers`` is 1), calling ``on_done`` as each ends."""
    outcomes: list[RunOutcome] = []
    if workers <= 1:
        for task in tasks:
            outcomes.append(run_task(task))
            on_done(outcomes[-1])
        return outcomes
    context = multiprocessing.get_context("spawn")  # no fork of a process that holds torch threads
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {pool.submit(run_task, task): task for task in tasks}
        try:
            for future in as_completed(futures):
                outcomes.append(_collect(future, futures[future]))
                on_done(outcomes[-1])
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return outcomes


def run_task(task: RunTask) -> RunOutcome:
    """Train one run (in a worker process); any error becomes a failed outcome and error.txt."""
    started = time.perf_counter()
    try:
        import torch

        from vfl.attacks import runner  # deferred: the parent needs no torch to plan or report

        if task.threads:
            torch.set_num_threads(task.threads)
        with torch.random.fork_rng(devices=[]):  # runs sharing a worker see no draws of others
            summary = runner.train(task.config, task.run_dir, resume=task.resume)
    except Exception as error:  # one bad run must not stop the sweep
        return _failure(task, error, traceback.format_exc(), time.perf_counter() - started)
    final = {k: v for k, v in summary["final"].items() if isinstance(v, int | float)}
    return RunOutcome(task.name, ok=True, seconds=time.perf_counter() - started, final=final)


def _prepare(folder: Path, run: PlannedRun, action: FolderAction, threads: int) -> RunTask:
    action.apply(folder)
    resume = action.state == "partial"
    return RunTask(run.name, folder / run.name, run.config, resume=resume, threads=threads)


def _collect(future: Future[RunOutcome], task: RunTask) -> RunOutcome:
    try:
        return future.result()
    except Exception as error:  # the worker process died (killed, out of memory)
        return _failure(task, error, traceback.format_exc(), 0.0)


def _failure(task: RunTask, error: BaseException, trace: str, seconds: float) -> RunOutcome:
    task.run_dir.mkdir(parents=True, exist_ok=True)
    (task.run_dir / ERROR).write_text(trace)
    message = f"{type(error).__name__}: {error}"
    return RunOutcome(task.name, ok=False, seconds=seconds, error=message)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _Progress:
    """Prints one line per finished run: ``[3/8] ok name (1.2 s) test_accuracy 0.8512``."""

    def __init__(self, total: int, metric: str, log: TextIO) -> None:
        self._total, self._metric, self._log = total, metric, log
        self._finished = 0

    def __call__(self, outcome: RunOutcome) -> None:
        self._finished += 1
        head = f"[{self._finished}/{self._total}]"
        if outcome.ok:
            value = outcome.final.get(self._metric)
            shown = f" {self._metric} {value:.4f}" if value is not None else ""
            line = f"{head} ok     {outcome.name} ({outcome.seconds:.1f} s){shown}"
        else:
            line = f"{head} FAILED {outcome.name}: {outcome.error} (traceback in {ERROR})"
        print(line, file=self._log, flush=True)
