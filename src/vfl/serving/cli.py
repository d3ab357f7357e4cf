"""The ``vfl predict`` subcommand (parse and dispatch only)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vfl.errors import DataError


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``predict`` to an ``argparse`` subparsers object."""
    predict = commands.add_parser(
        "predict", help="predict with a trained run's model bundles (in one process)"
    )
    predict.add_argument("run_dir", type=Path, help="a run directory holding bundle/")
    predict.add_argument(
        "--data",
        type=Path,
        help="a CSV or Parquet table with every party's raw columns (default: the run's test"
        " split)",
    )
    predict.add_argument(
        "--id-column", default="", help="the ID column of --data (default: the run's, if present)"
    )
    predict.add_argument(
        "--out", type=Path, help="where to write the CSV (default: RUN_DIR/predictions.csv)"
    )
    predict.add_argument("--force", action="store_true", help="replace an existing --out file")
    predict.add_argument(
        "--strict",
        action="store_true",
        help="refuse --data rows holding a category unseen in training (default: score them by"
        " the training rule, all zeros one-hot, and report them)",
    )
    predict.set_defaults(handler=_predict)


def _predict(args: argparse.Namespace) -> int:
    from vfl.results.files import check_output

    _check_inputs(args.run_dir, args.data)
    out = args.out or args.run_dir / "predictions.csv"
    check_output(out, force=args.force, inputs=() if args.data is None else (args.data,))
    from vfl.serving.batch import predict, unseen_note, write_predictions  # torch loads slowly

    predictions = predict(
        args.run_dir, data=args.data, id_column=args.id_column, strict=args.strict
    )
    out = write_predictions(predictions, out, force=args.force, data=args.data)
    note = unseen_note(predictions, out)
    if note is not None:
        print(f"vfl: note: {note}", file=sys.stderr)
    line = f"{len(predictions.ids)} predictions written to {out}"
    if predictions.metrics is not None:
        shown = ", ".join(f"{name} {value:.4f}" for name, value in predictions.metrics.items())
        line += f" ({shown} on the labels the rows held)"
    print(line)
    return 0


def _check_inputs(run_dir: Path, data: Path | None) -> None:
    """What the command reads is there, before anything about what it writes is said."""
    if not run_dir.is_dir():
        raise DataError(f"run directory {str(run_dir)!r} does not exist")
    if data is not None and not data.is_file():
        raise DataError(f"--data {str(data)!r}: no such file (a CSV or Parquet table of raw rows)")
