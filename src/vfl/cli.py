"""The ``vfl`` command line: parse arguments and dispatch to library functions (no logic here)."""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import json
import logging
import pickle
import sys
import tempfile
import tomllib
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from vfl.config import load_config
from vfl.deploy.cli import register as register_deploy
from vfl.errors import ConfigError, SomeWorkFailed, VflError
from vfl.experiments.cli import register as register_experiments
from vfl.privacy.cli import register as register_privacy
from vfl.results.files import check_new, failure_line, saved_traceback
from vfl.run.collector import imports_frozen
from vfl.run.signals import exit_status
from vfl.serving.cli import register as register_serving

EXTRAS = {
    "grpc": "deploy",
    "google": "deploy",
    "nacl": "deploy",
    "matplotlib": "plots",
    "ray": "ray",
    "tensorboard": "tracking",
    "starlette": "deploy",
    "uvicorn": "deploy",
}
"""Optional dependencies by top-level module, and the extra that installs each."""
EXPECTED = (VflError, OSError)
"""Failures a user can cause or fix (bad input, the file system, the network): one line, 2."""
UNDECODABLE = (
    json.JSONDecodeError,
    UnicodeDecodeError,
    tomllib.TOMLDecodeError,
    pickle.UnpicklingError,
    EOFError,
)
"""A file that is not what it should be, found where no layer below named it: one line that
says where the traceback (which names the file) was saved, 2."""
SUCCESS = 0
INTERNAL_ERROR = 1
USER_ERROR = 2
"""Bad input, or a request refused before anything changed (a run over its privacy budget)."""
BUDGET_STOPPED = 3
"""Training stopped at the privacy budget (``privacy.max_epsilon``) before its planned epochs."""
SOME_FAILED = 4
"""The command ran but part of the requested work failed (``SomeWorkFailed``: ``vfl score``
with an ID that was not scored; a sweep with a failed run)."""
INTERRUPTED, TERMINATED = 130, 143
"""Stopped by Ctrl-C (SIGINT); stopped by SIGTERM. Every status: docs/troubleshooting.md,
"Exit codes"."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``vfl`` console script; returns the exit status.

    No traceback reaches the terminal: an expected failure prints one line (status 2); any
    other exception prints one line saying where its full traceback was saved (status 1).
    """
    if argv is None:  # the process's own command line (a call from Python keeps its warnings)
        warnings.showwarning = _show_warning
    args = _parser().parse_args(argv)
    args.own_process = argv is None  # its imports are for good (vfl.run.collector)
    status = _main(args)
    if argv is None:  # the process's own command line: it exits next
        sys.stdout.flush()
        sys.stderr.flush()
        # Spares the interpreter's final garbage collection over the millions of objects torch
        # and torch._dynamo create: 0.7 s of a short `vfl run` (docs/troubleshooting.md).
        # Everything vfl writes is closed by now.
        gc.freeze()
    return status


def _main(args: argparse.Namespace) -> int:
    try:
        status: int = args.handler(args)
        return status
    except KeyboardInterrupt as stopped:
        print(f"vfl: {_interruption(stopped)}", file=sys.stderr)
        return exit_status(stopped)
    except SomeWorkFailed as error:
        print(f"vfl: {error}", file=sys.stderr)
        return SOME_FAILED
    except EXPECTED as error:
        print(f"vfl: error: {failure_line(error)}", file=sys.stderr)
        return USER_ERROR
    except ModuleNotFoundError as error:
        extra = EXTRAS.get((error.name or "").partition(".")[0])
        if extra is None:
            return _internal_error(error)
        print(
            f"vfl: error: `vfl {args.command}` needs {error.name!r}, an optional dependency:"
            f" pip install 'vfl[{extra}]'",
            file=sys.stderr,
        )
        return USER_ERROR
    except UNDECODABLE as error:
        where = _traceback_file(error)
        print(
            f"vfl: error: a file is cut short or not in its format ({failure_line(error)});"
            f" {where}",
            file=sys.stderr,
        )
        return USER_ERROR
    except Exception as error:
        return _internal_error(error)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A warning as one line like every other notice: ``vfl: warning: MESSAGE``.

    Python's own format shows the source line and path of the code that warned, which is vfl's
    code and means nothing to the user of a command.
    """
    print(f"vfl: warning: {message}", file=file or sys.stderr)


def _interruption(stopped: KeyboardInterrupt) -> str:
    """What an interruption no command explained says: the signal, if known."""
    reason = getattr(stopped, "reason", "")
    return f"stopped by {reason}" if reason else "interrupted"


def _internal_error(error: BaseException) -> int:
    print(
        f"vfl: internal error: {failure_line(error)} (a bug in vfl; please report it,"
        f" with the {_traceback_file(error)})",
        file=sys.stderr,
    )
    return INTERNAL_ERROR


def _traceback_file(error: BaseException) -> str:
    """Where the full traceback of ``error`` is: the run folder's, or a new temporary file."""
    path = saved_traceback(error)
    if path is None:
        try:
            with tempfile.NamedTemporaryFile(
                "w", prefix="vfl-traceback-", suffix=".txt", delete=False
            ) as handle:
                handle.write("".join(traceback.format_exception(error)))
            path = Path(handle.name)
        except OSError as failure:
            return f"traceback, which could not be saved ({failure_line(failure)})"
    return f"full traceback in {path}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vfl", description="Vertical federated learning.")
    parser.add_argument("--version", action="version", version=f"vfl {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run(commands)
    data = commands.add_parser("data", help="list or fetch data sets")
    data_commands = data.add_subparsers(dest="data_command", required=True, metavar="ACTION")
    listing = data_commands.add_parser("list", help="registered data sets and whether cached")
    listing.set_defaults(handler=_data_list)
    fetch = data_commands.add_parser("fetch", help="download a data set into the cache")
    fetch.add_argument("name", help="data set name (see `vfl data list`)")
    fetch.add_argument("--force", action="store_true", help="fetch again even if cached")
    fetch.add_argument(
        "--allow-unverified",
        action="store_true",
        help="allow a download that no known checksum can verify",
    )
    fetch.set_defaults(handler=_data_fetch)
    register_experiments(commands)
    register_privacy(commands)
    register_deploy(commands)
    register_serving(commands)
    return parser


def _version() -> str:
    """The installed package's version (its metadata), or what is known without it."""
    try:
        return importlib.metadata.version("vfl")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        return "(not installed)"


def _add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser(
        "run",
        help="train from a TOML config",
        description="Train a model from a TOML config (every party, in one process) into a run"
        " directory: metrics, summary, ledger, checkpoint and model bundles.",
    )
    _run_arguments(run, attack=False)
    attack = commands.add_parser(
        "attack", help="train from a TOML config with its [attack] watching one role"
    )
    _run_arguments(attack, attack=True)


def _run_arguments(run: argparse.ArgumentParser, *, attack: bool) -> None:
    run.add_argument("config", nargs="?", type=Path, help="run config (TOML)")
    run.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value, e.g. --set train.epochs=3 (repeatable)",
    )
    run.add_argument("--run-dir", type=Path, help="write results here (default: output.dir/...)")
    run.add_argument(
        "--resume", type=Path, metavar="RUN_DIR", help="continue a run from its last checkpoint"
    )
    run.add_argument(
        "--quiet", action="store_true", help="no progress bar: print one summary line only"
    )
    run.add_argument(
        "--json", action="store_true", help="print the whole summary (summary.json) on stdout"
    )
    run.set_defaults(handler=_run, attack=attack)


def _run(args: argparse.Namespace) -> int:
    from vfl.run.folders import default_run_dir, resumed_config
    from vfl.run.signals import stop_on_signals

    overrides = list(args.overrides)
    if args.resume is not None:
        if args.config is not None or args.run_dir is not None:
            raise ConfigError(
                "--resume RUN_DIR takes its config from RUN_DIR/config.toml; drop"
                " the CONFIG and --run-dir arguments"
            )
        config = resumed_config(args.resume, overrides)
        run_dir: Path = args.resume
    elif args.config is None:
        raise ConfigError("vfl run needs a CONFIG file (see examples/) or --resume RUN_DIR")
    else:
        config = load_config(args.config, overrides)
        run_dir = args.run_dir or default_run_dir(config, args.config.stem)
        check_new(run_dir)
    if args.attack and config.attack.name == "none":
        raise ConfigError(
            "vfl attack: the config names no attack: set [attack] name (and role, party), e.g."
            " --set attack.name=label_inference"
        )
    # deferred until the input is checked: they take seconds
    with imports_frozen(getattr(args, "own_process", False)):
        from vfl.attacks import runner as attacks
        from vfl.run import fit, runner
        from vfl.run.console import show_result
        from vfl.run.progress import Progress, Terminal

    _clean_log_lines()

    def announce() -> None:  # once the run is known to start: a refused one has no folder
        if not args.quiet:
            print(f"run directory: {run_dir}", file=sys.stderr)

    progress = Progress() if args.quiet else Terminal(bar=config.output.progress)
    try:
        with stop_on_signals() as stop:
            summary = attacks.train(
                config,
                run_dir,
                resume=args.resume is not None,
                stop=stop,
                on_start=announce,
                progress=progress,
            )
    except (fit.RunStopped, KeyboardInterrupt) as stopped:
        command = "vfl attack" if args.attack else "vfl run"
        print(f"vfl: {runner.failure_message(stopped, run_dir, command)}", file=sys.stderr)
        return exit_status(stopped)
    show_result(summary, run_dir, as_json=args.json, quiet=args.quiet)
    if args.attack and not args.quiet and not args.json:
        from vfl.attacks.reading import format_table

        print(format_table(summary))
    budget = summary.get("privacy", {}).get("budget", {})
    if budget.get("stopped"):
        print(f"vfl: {budget['message']}; results in {run_dir}", file=sys.stderr)
        return BUDGET_STOPPED
    return SUCCESS


class _Notice(logging.Formatter):
    """``vfl: warning: MESSAGE``: a log record as the command's other notices look."""

    def format(self, record: logging.LogRecord) -> str:
        """The record in one line."""
        return f"vfl: {record.levelname.lower()}: {record.getMessage()}"


def _clean_log_lines() -> None:
    """Warnings that vfl logs, as one line each (``vfl: warning: ...``), on standard error.

    The deployment commands log with times and module names instead (``vfl.deploy.commands``).
    """
    if not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_Notice())
        handler.setLevel(logging.WARNING)
        logging.getLogger().addHandler(handler)


def _data_list(args: argparse.Namespace) -> int:
    from vfl.data.registry import list_datasets

    for info in list_datasets():
        state = "cached" if info.present else "not cached"
        print(f"{info.name:16} {state:11} {info.description}")
    return 0


def _data_fetch(args: argparse.Namespace) -> int:
    from vfl.data.registry import fetch_dataset

    path = fetch_dataset(args.name, force=args.force, allow_unverified=args.allow_unverified)
    print(f"{args.name}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
