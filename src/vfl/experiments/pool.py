"""Running a sweep's tasks in this process or a pool of worker processes, and stopping them.

``execute`` runs the tasks one after another in this process (one worker), else in a ``spawn``
process pool. SIGINT or SIGTERM stops it: the runs in training finish their round and write a
checkpoint (``run_task`` stops on either signal), no other run starts, and ``Stopped`` carries
every outcome, so that the sweep can say what it kept.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

from vfl.experiments.tasks import RunOutcome, RunTask, record_failure, run_task
from vfl.run.signals import Interrupted, stop_on_signals

UNGUARDED_SCRIPT = (
    "vfl: a sweep worker stopped at its start: it imports the script that started the sweep,"
    " and that script calls run_sweep at its top level. Call it under"
    ' `if __name__ == "__main__":` (docs/experiments.md, "From Python"), or pass workers=1'
)
BROKEN_POOL = (
    "a worker process ended abruptly (killed, out of memory, or stopped at its start: see the"
    " lines above)"
)


def refuse_inside_worker_start() -> None:
    """Stop a pool worker that, importing the user's script at its start, reached ``run_sweep``.

    A ``spawn`` worker runs the main script again before its task; a script without the
    ``__main__`` guard would plan (and start) the sweep again in every worker. Python marks
    that phase on the process (``_inheriting``), the mark its own refusal to start a process
    then reads, so the worker ends here with one line, before it touches a folder.
    """
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        sys.exit(UNGUARDED_SCRIPT)


class WorkerEnded(RuntimeError):
    """The worker process that ran (or was to run) a task ended without its outcome."""


class Stopped(Exception):
    """A signal stopped ``execute``; ``outcomes`` holds the runs that ended before and since."""

    def __init__(self, reason: str, outcomes: list[RunOutcome]) -> None:
        super().__init__(reason)
        self.reason, self.outcomes = reason, outcomes


def execute(
    tasks: Sequence[RunTask], *, workers: int, on_done: Callable[[RunOutcome], None]
) -> list[RunOutcome]:
    """Run ``tasks`` (in this process if ``workers`` is 1), calling ``on_done`` as each ends.

    SIGINT or SIGTERM stops it: the runs in training finish their round and checkpoint (Ctrl-C
    reaches the workers from the terminal; a SIGTERM is passed on to them), no other run starts,
    and ``Stopped`` carries every outcome. A second signal stops the workers at once.

    Raises:
        Stopped: if a signal stopped it.
    """
    outcomes: list[RunOutcome] = []
    with stop_on_signals(at_once=True):
        try:
            if workers <= 1:
                _execute_here(tasks, outcomes, on_done)
            else:
                _execute_in_pool(tasks, workers, outcomes, on_done)
        except Interrupted as interrupted:
            raise Stopped(interrupted.reason, outcomes) from None
    stopped = [outcome for outcome in outcomes if outcome.stopped]
    if stopped:
        raise Stopped(_reason(stopped[0]), outcomes)
    return outcomes


def _execute_here(
    tasks: Sequence[RunTask], outcomes: list[RunOutcome], on_done: Callable[[RunOutcome], None]
) -> None:
    for task in tasks:
        outcomes.append(run_task(task))  # with its own handlers: a signal stops after a round
        on_done(outcomes[-1])
        if outcomes[-1].stopped:
            return


def _execute_in_pool(
    tasks: Sequence[RunTask],
    workers: int,
    outcomes: list[RunOutcome],
    on_done: Callable[[RunOutcome], None],
) -> None:
    context = multiprocessing.get_context("spawn")  # no fork of a process that holds torch threads
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {pool.submit(run_task, task): task for task in tasks}
        done: set[Future[RunOutcome]] = set()
        try:
            for future in as_completed(futures):
                done.add(future)
                outcomes.append(_collect(future, futures[future]))
                on_done(outcomes[-1])
        except Interrupted as interrupted:
            for future in futures:
                future.cancel()  # those not started
            _stop_workers(interrupted.reason)
            for future in futures:  # the runs in training end after their round
                if future not in done and not future.cancelled():
                    outcomes.append(_collect(future, futures[future]))
                    on_done(outcomes[-1])
            raise


def _stop_workers(reason: str) -> None:
    """Pass a SIGTERM on to the workers (Ctrl-C reached them from the terminal already)."""
    if reason != "SIGTERM":
        return
    for child in multiprocessing.active_children():
        if child.pid is not None:
            os.kill(child.pid, signal.SIGTERM)


def _reason(outcome: RunOutcome) -> str:
    """The signal named in a stopped run's message (``stopped by SIGTERM after ...``)."""
    words = outcome.error.split()
    return words[2] if len(words) > 2 and words[2].startswith("SIG") else "SIGINT"


def _collect(future: Future[RunOutcome], task: RunTask) -> RunOutcome:
    try:
        return future.result()
    except BrokenProcessPool:
        return record_failure(task, WorkerEnded(BROKEN_POOL), traceback.format_exc(), 0.0)
    except Exception as error:  # the task could not reach the worker or come back
        return record_failure(task, error, traceback.format_exc(), 0.0)
