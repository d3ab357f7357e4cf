"""The ``vfl sweep`` and ``vfl plot`` subcommands (parse and dispatch only)."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from vfl.config.arguments import MAX_THREADS, MAX_WAIT_S, check_argument
from vfl.config.fields import Range
from vfl.errors import ConfigError

if TYPE_CHECKING:
    from vfl.experiments.ray_executor import RayOptions
    from vfl.experiments.sweep import SweepStopped

Subparsers = argparse._SubParsersAction  # argparse exposes no public name for this type
SOME_FAILED = 4
"""``vfl sweep``'s exit status when a run failed (the others ran; docs/troubleshooting.md)."""
EXECUTORS = ("local", "ray")
RAY_ONLY = ("address", "cpus_per_run", "gpus_per_run", "connect_timeout_s")
MAX_GPUS = 64
"""The most GPUs one run may reserve."""
"""Options of ``vfl sweep`` that only ``--executor ray`` takes."""


def register(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """Add ``sweep`` and ``plot`` to the ``vfl`` command's subparsers."""
    sweep = subparsers.add_parser("sweep", help="run a grid of configs over seeds, then report")
    sweep.add_argument("sweep", type=Path, help="sweep file (TOML), see docs/experiments.md")
    sweep.add_argument(
        "--workers", type=int, metavar="N", help="parallel worker processes (default: the file's)"
    )
    sweep.add_argument(
        "--dry-run",
        action="store_true",
        help="show what happens to each run folder (keep, resume, extend, move aside, create)",
    )
    sweep.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="where the runs go: a local process pool (default) or Ray tasks (vfl[ray])",
    )
    sweep.add_argument(
        "--address",
        metavar="ADDR",
        help="with --executor ray: the Ray cluster (HOST:PORT or auto; default: a local instance)",
    )
    sweep.add_argument(
        "--cpus-per-run",
        type=float,
        metavar="N",
        help="with --executor ray: CPUs each run reserves, and its torch threads (default 1)",
    )
    sweep.add_argument(
        "--gpus-per-run",
        type=float,
        metavar="N",
        help="with --executor ray: GPUs each run reserves (default 0)",
    )
    sweep.add_argument(
        "--connect-timeout-s",
        type=float,
        metavar="S",
        help="with --executor ray --address: how long the cluster may take to answer (default 30)",
    )
    sweep.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a run config value in every run, after the file's (repeatable)",
    )
    sweep.add_argument(
        "--quiet", action="store_true", help="no line per run and no bar: print one final line"
    )
    sweep.add_argument(
        "--json", action="store_true", help="print what ran and how it ended as JSON on stdout"
    )
    sweep.set_defaults(handler=_sweep)

    plot = subparsers.add_parser("plot", help="redraw plots (and a sweep's tables) from results")
    plot.add_argument("path", type=Path, metavar="RUN_OR_SWEEP_DIR", help="run or sweep folder")
    plot.add_argument("--metric", help="metric to draw (default: the sweep's, or test_accuracy)")
    plot.add_argument("--log-x", action="store_true", default=None, help="log-scale traffic axis")
    plot.set_defaults(handler=_plot)


def _sweep(args: argparse.Namespace) -> int:
    from vfl.experiments.spec import read_sweep, with_command_line
    from vfl.experiments.sweep import SweepStopped, run_sweep  # deferred: matplotlib, numpy
    from vfl.run.signals import exit_status

    check_argument("--workers", args.workers, Range(ge=1, le=MAX_THREADS))
    check_argument("--cpus-per-run", args.cpus_per_run, Range(gt=0, le=MAX_THREADS))
    check_argument("--gpus-per-run", args.gpus_per_run, Range(ge=0, le=MAX_GPUS))
    check_argument("--connect-timeout-s", args.connect_timeout_s, Range(gt=0, le=MAX_WAIT_S))
    ray = _ray_options(args)
    spec = with_command_line(read_sweep(args.sweep), args.overrides)
    log = io.StringIO() if args.quiet else sys.stderr
    try:
        result = run_sweep(
            spec, workers=args.workers, dry_run=args.dry_run, ray=ray, log=log, bar=True
        )
    except SweepStopped as stopped:
        print(f"vfl: {_stopped(stopped, args.sweep)}", file=sys.stderr)
        return exit_status(stopped)
    except KeyboardInterrupt as stopped:  # on Ray: the running tasks were cancelled
        print(f"vfl: interrupted; continue with `vfl sweep {args.sweep}`", file=sys.stderr)
        return exit_status(stopped)
    for outcome in result.failed:
        print(f"vfl: run {outcome.name} failed: {outcome.error}", file=sys.stderr)
    if args.dry_run:
        return 0
    print(json.dumps(result.summary(), indent=2) if args.json else result.line())
    return SOME_FAILED if result.failed else 0


def _stopped(stopped: SweepStopped, sweep: Path) -> str:
    """What a stopped sweep kept, and the command that goes on."""
    result = stopped.result
    finished = sum(o.ok for o in result.outcomes) + sum(
        not a.trains for a in result.actions.values()
    )
    kept = (
        f"; {len(result.stopped)} stopped after a round with a checkpoint" if result.stopped else ""
    )
    return (
        f"stopped by {stopped.reason}: {finished} of {len(result.actions)} runs finished"
        f" (in {result.folder}){kept}; continue with `vfl sweep {sweep}`"
        " (it skips finished runs and resumes the others)"
    )


def _ray_options(args: argparse.Namespace) -> RayOptions | None:
    from vfl.experiments.ray_executor import RayOptions  # imports no Ray itself

    given = [name for name in RAY_ONLY if getattr(args, name) is not None]
    if args.executor != "ray":
        if given:
            flag = "--" + given[0].replace("_", "-")
            raise ConfigError(f"{flag} is an option of --executor ray, not --executor local")
        return None
    defaults = RayOptions()
    return RayOptions(
        address=args.address,
        cpus_per_run=defaults.cpus_per_run if args.cpus_per_run is None else args.cpus_per_run,
        gpus_per_run=defaults.gpus_per_run if args.gpus_per_run is None else args.gpus_per_run,
        connect_timeout_s=(
            defaults.connect_timeout_s if args.connect_timeout_s is None else args.connect_timeout_s
        ),
    )


def _plot(args: argparse.Namespace) -> int:
    from vfl.experiments.report import redraw

    for path in redraw(args.path, metric=args.metric, log_x=args.log_x):
        print(path)
    return 0
