"""Run a sweep: skip finished runs, resume partial ones, run the rest in worker processes.

``run_sweep`` validates every run's config first, writes ``sweep.json``, runs what is left
(in this process with one worker, else in a ``spawn`` process pool with
``torch.set_num_threads(max(1, cores // workers))`` in each worker), then writes the reports.
A failing run leaves its traceback in ``error.txt`` and does not stop the others.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from vfl.config import RunConfig
from vfl.experiments.files import ERROR, SUMMARY, Manifest, SettingEntry, write_manifest
from vfl.experiments.plan import STATES, PlannedRun, RunState, plan, run_state
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
        states: Each run's state before the sweep ran (``done`` runs were skipped).
        outcomes: One outcome per run that ran, in order of completion.
        reports: The report files written (tables, CSVs, plots).
    """

    folder: Path
    states: dict[str, RunState]
    outcomes: tuple[RunOutcome, ...] = ()
    reports: tuple[Path, ...] = ()

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
        dry_run: Only report each run's state (``done``, ``partial``, ``new``); run nothing.
        log: Where the progress lines go.

    Raises:
        ConfigError: if any run's config is invalid (before anything runs).
    """
    runs = plan(spec)
    folder = spec.folder
    states = {run.name: run_state(folder / run.name, run.config) for run in runs}
    counts = ", ".join(f"{sum(s == k for s in states.values())} {k}" for k in STATES)
    print(f"sweep {spec.name}: {len(runs)} runs ({counts}) in {folder}", file=log)
    if dry_run:
        for run in runs:
            print(f"  {states[run.name]:8} {run.name}", file=log)
        return SweepResult(folder, states)
    write_manifest(folder, manifest_of(spec, runs))
    pending = [run for run in runs if states[run.name] != "done"]
    workers = max(1, min(workers or spec.workers, len(pending)))
    threads = max(1, _cores() // workers) if workers > 1 else 0
    tasks = [_prepare(folder / run.name, run, states[run.name], threads) for run in pending]
    outcomes = execute(tasks, workers=workers, on_done=_Progress(len(tasks), spec.metric, log))
    reports = write_sweep_report(folder)
    print(f"tables and plots in {folder}", file=log)
    return SweepResult(folder, states, tuple(outcomes), tuple(reports))


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

        from vfl.run import runner  # deferred: the parent needs no torch to plan or report

        if task.threads:
            torch.set_num_threads(task.threads)
        with torch.random.fork_rng(devices=[]):  # runs sharing a worker see no draws of others
            summary = runner.train(task.config, task.run_dir, resume=task.resume)
    except Exception as error:  # one bad run must not stop the sweep
        return _failure(task, error, traceback.format_exc(), time.perf_counter() - started)
    final = {k: v for k, v in summary["final"].items() if isinstance(v, int | float)}
    return RunOutcome(task.name, ok=True, seconds=time.perf_counter() - started, final=final)


def _prepare(run_dir: Path, run: PlannedRun, state: RunState, threads: int) -> RunTask:
    if state == "new" and run_dir.exists():
        shutil.rmtree(run_dir)  # stale partial files of another config
    for name in (SUMMARY, ERROR):
        (run_dir / name).unlink(missing_ok=True)
    return RunTask(run.name, run_dir, run.config, resume=state == "partial", threads=threads)


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
