"""The ``vfl`` command line: parse arguments and dispatch to library functions (no logic here)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from vfl.config import RunConfig, load_config
from vfl.config.io import from_mapping, merge, parse_overrides, read_toml
from vfl.deploy.cli import register as register_deploy
from vfl.errors import ConfigError, VflError
from vfl.experiments.cli import register as register_experiments
from vfl.privacy.cli import register as register_privacy
from vfl.serving.cli import register as register_serving

RESUMABLE_KEYS = ("train.epochs", "output.progress")
EXTRAS = {"grpc": "deploy", "google": "deploy", "nacl": "deploy", "matplotlib": "plots"}
"""Optional dependencies by top-level module, and the extra that installs each."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``vfl`` console script; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.handler(args)
        return status
    except VflError as error:
        print(f"vfl: error: {error}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as error:
        extra = EXTRAS.get((error.name or "").partition(".")[0])
        if extra is None:
            raise
        print(
            f"vfl: error: `vfl {args.command}` needs {error.name!r}, an optional dependency:"
            f" pip install 'vfl[{extra}]'",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print("vfl: interrupted; resume with `vfl run --resume RUN_DIR`", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vfl", description="Vertical federated learning.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="train from a TOML config")
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
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(handler=_run)

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


def _run(args: argparse.Namespace) -> int:
    from vfl.run import runner  # deferred: importing torch takes seconds

    overrides = list(args.overrides) + (["output.progress=false"] if args.quiet else [])
    if args.resume is not None:
        if args.config is not None or args.run_dir is not None:
            raise ConfigError(
                "--resume RUN_DIR takes its config from RUN_DIR/config.toml; drop"
                " the CONFIG and --run-dir arguments"
            )
        config = _resumed_config(args.resume, overrides)
        run_dir = args.resume
    else:
        if args.config is None:
            raise ConfigError("vfl run needs a CONFIG file (see examples/) or --resume RUN_DIR")
        config = load_config(args.config, overrides)
        run_dir = args.run_dir or runner.default_run_dir(config, args.config.stem)
    print(f"run directory: {run_dir}", file=sys.stderr)
    summary = runner.train(config, run_dir, resume=args.resume is not None)
    print(json.dumps(summary, indent=2))
    final = ", ".join(f"{k} {v:.4f}" for k, v in summary["final"].items() if k.startswith("test_"))
    print(f"final: {final} (results in {run_dir})", file=sys.stderr)
    return 0


def _resumed_config(run_dir: Path, overrides: list[str]) -> RunConfig:
    for item in overrides:
        key = item.partition("=")[0].strip()
        if key not in RESUMABLE_KEYS:
            raise ConfigError(f"--set {key} cannot change on resume; only {RESUMABLE_KEYS} can")
    saved = read_toml(run_dir / "config.toml")
    return from_mapping(RunConfig, merge(saved, parse_overrides(overrides)))


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
