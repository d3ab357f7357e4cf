"""One run of a sweep as a unit of work: what an executor ships (``RunTask``), and what comes back.

Both executors (the local process pool in ``vfl.experiments.sweep`` and Ray in
``vfl.experiments.ray_executor``) call ``run_task`` in a worker and turn a worker that died into
a failed outcome with ``record_failure``, so a run's folder holds the same files either way.
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from vfl.config import RunConfig
from vfl.experiments.files import ERROR
from vfl.run.signals import RunStopped, stop_on_signals


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
    """How one run ended: ``ok``, its wall time, its final metrics, or the error.

    ``stopped``: a signal stopped it after a round, with a checkpoint a later sweep resumes
    from (not ``ok``, and not a failure either).
    """

    name: str
    ok: bool
    seconds: float
    final: dict[str, float] = field(default_factory=dict)
    error: str = ""
    stopped: bool = False


def run_task(task: RunTask) -> RunOutcome:
    """Train one run (in a worker process); any error becomes a failed outcome and error.txt."""
    started = time.perf_counter()
    try:
        import torch

        from vfl.attacks import runner  # deferred: the parent needs no torch to plan or report
        from vfl.run.progress import Progress

        if task.threads:
            torch.set_num_threads(task.threads)
        with torch.random.fork_rng(devices=[]), stop_on_signals() as stop:
            # The sweep reports each run as it ends; its workers' epochs would interleave.
            summary = runner.train(
                task.config, task.run_dir, resume=task.resume, stop=stop, progress=Progress()
            )
    except RunStopped as stopped:  # Ctrl-C, or the sweep passing on its SIGTERM
        seconds = time.perf_counter() - started
        return RunOutcome(task.name, ok=False, seconds=seconds, error=str(stopped), stopped=True)
    except Exception as error:  # one bad run must not stop the sweep
        return record_failure(task, error, traceback.format_exc(), time.perf_counter() - started)
    final = {k: v for k, v in summary["final"].items() if isinstance(v, int | float)}
    return RunOutcome(task.name, ok=True, seconds=time.perf_counter() - started, final=final)


def record_failure(task: RunTask, error: BaseException, trace: str, seconds: float) -> RunOutcome:
    """Write ``trace`` to the run's ``error.txt`` and return the failed outcome naming ``error``."""
    task.run_dir.mkdir(parents=True, exist_ok=True)
    (task.run_dir / ERROR).write_text(trace)
    message = f"{type(error).__name__}: {error}"
    return RunOutcome(task.name, ok=False, seconds=seconds, error=message)


def cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
