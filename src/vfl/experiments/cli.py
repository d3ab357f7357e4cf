"""The ``vfl sweep`` and ``vfl plot`` subcommands (parse and dispatch only)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vfl.errors import ConfigError

Subparsers = argparse._SubParsersAction  # argparse exposes no public name for this type


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
    sweep.set_defaults(handler=_sweep)

    plot = subparsers.add_parser("plot", help="redraw plots (and a sweep's tables) from results")
    plot.add_argument("path", type=Path, metavar="RUN_OR_SWEEP_DIR", help="run or sweep folder")
    plot.add_argument("--metric", help="metric to draw (default: the sweep's, or test_accuracy)")
    plot.add_argument("--log-x", action="store_true", default=None, help="log-scale traffic axis")
    plot.set_defaults(handler=_plot)


def _sweep(args: argparse.Namespace) -> int:
    from vfl.experiments.spec import read_sweep
    from vfl.experiments.sweep import run_sweep  # deferred: matplotlib and numpy load slowly

    if args.workers is not None and args.workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {args.workers}")
    spec = read_sweep(args.sweep)
    try:
        result = run_sweep(spec, workers=args.workers, dry_run=args.dry_run)
    except KeyboardInterrupt:
        print(f"vfl: interrupted; run `vfl sweep {args.sweep}` again to resume", file=sys.stderr)
        return 130
    for outcome in result.failed:
        print(f"vfl: run {outcome.name} failed: {outcome.error}", file=sys.stderr)
    return 1 if result.failed else 0


def _plot(args: argparse.Namespace) -> int:
    from vfl.experiments.report import redraw

    for path in redraw(args.path, metric=args.metric, log_x=args.log_x):
        print(path)
    return 0
