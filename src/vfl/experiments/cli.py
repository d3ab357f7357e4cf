"""The ``vfl sweep`` and ``vfl plot`` subcommands (parse and dispatch only)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from vfl.config.arguments import MAX_THREADS, MAX_WAIT_S, check_argument
from vfl.config.fields import Range
from vfl.errors import ConfigError

if TYPE_CHECKING:
    from vfl.experiments.ray_executor import RayOptions

Subparsers = argparse._SubParsersAction  # argparse exposes no public name for this type
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
    sweep.set_defaults(handler=_sweep)

    plot = subparsers.add_parser("plot", help="redraw plots (and a sweep's tables) from results")
    plot.add_argument("path", type=Path, metavar="RUN_OR_SWEEP_DIR", help="run or sweep folder")
    plot.add_argument("--metric", help="metric to draw (default: the sweep's, or test_accuracy)")
    plot.add_argument("--log-x", action="store_true", default=None, help="log-scale traffic axis")
    plot.set_defaults(handler=_plot)


def _sweep(args: argparse.Namespace) -> int:
    from vfl.experiments.spec import read_sweep
    from vfl.experiments.sweep import run_sweep  # deferred: matplotlib and numpy load slowly

    check_argument("--workers", args.workers, Range(ge=1, le=MAX_THREADS))
    check_argument("--cpus-per-run", args.cpus_per_run, Range(gt=0, le=MAX_THREADS))
    check_argument("--gpus-per-run", args.gpus_per_run, Range(ge=0, le=MAX_GPUS))
    check_argument("--connect-timeout-s", args.connect_timeout_s, Range(gt=0, le=MAX_WAIT_S))
    ray = _ray_options(args)
    spec = read_sweep(args.sweep)
    try:
        result = run_sweep(spec, workers=args.workers, dry_run=args.dry_run, ray=ray)
    except KeyboardInterrupt:
        print(f"vfl: interrupted; run `vfl sweep {args.sweep}` again to resume", file=sys.stderr)
        return 130
    for outcome in result.failed:
        print(f"vfl: run {outcome.name} failed: {outcome.error}", file=sys.stderr)
    return 1 if result.failed else 0


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
