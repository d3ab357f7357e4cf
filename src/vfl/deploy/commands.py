"""What each deployment subcommand does once parsed (``vfl.deploy.cli`` parses).

Every handler imports what it needs when it runs, so that ``vfl score`` and ``vfl launch``
start without torch.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vfl.config.arguments import MAX_WAIT_S, check_argument
from vfl.config.fields import Range
from vfl.errors import ConfigError, SomeWorkFailed
from vfl.transport.address import MAX_PORT

if TYPE_CHECKING:
    from vfl.run.progress import Progress

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
PORT_WAIT_S = 600.0
"""How long a party started with ``--server-port-file`` waits for the server to listen."""


def _predict_args(args: argparse.Namespace) -> tuple[Path, Path, Path]:
    """``--model``, ``--data`` and ``--out`` of a batch prediction, checked."""
    if args.resume or getattr(args, "run_dir", None) is not None:
        raise ConfigError("--predict does not train: drop --resume and --run-dir")
    if args.model is None or args.data is None:
        raise ConfigError("--predict needs --model RUN_DIR (the trained run) and --data NEW_IDS")
    return args.model, args.data, args.out or args.model / "predictions.csv"


def handle_server(args: argparse.Namespace) -> int:
    """``vfl server``: train (or, with ``--predict``, predict) as the label holder."""
    from vfl.run.console import process_age, show_result
    from vfl.run.progress import Events, Progress, Terminal

    started = time.monotonic() - process_age()  # before the imports that take seconds
    from vfl.deploy.config import load_run_config
    from vfl.deploy.phases import SetupPhases
    from vfl.deploy.server import run_server, stopped_message
    from vfl.deploy.stopping import server_command, server_next_step
    from vfl.run.fit import RunStopped
    from vfl.run.folders import default_run_dir
    from vfl.run.signals import exit_status, stop_on_signals

    _log_to_stderr(quiet=args.quiet)
    config, deployment = load_run_config(args.config, args.overrides)
    if args.predict:
        return _server_predict(args, config, deployment)
    run_dir = args.run_dir or default_run_dir(config, args.config.stem)
    if args.resume and args.run_dir is None and not config.output.name:
        raise ConfigError("--resume needs the run directory: give --run-dir or output.name")
    again = server_command(args, run_dir)
    progress: Progress = Progress()
    if not args.quiet:
        progress = Terminal(bar=config.output.progress, clock=started)
    if args.events:
        progress = Events()
        warnings_as_notes(progress)
    elif not args.quiet:
        print(f"run directory: {run_dir}", file=sys.stderr)
    phases = SetupPhases(progress, started)
    source = repr(str(args.config)) + (" with --set" if args.overrides else "")
    try:
        with stop_on_signals(at_once=True) as stop:
            summary = run_server(
                config,
                deployment,
                run_dir,
                resume=args.resume,
                port_file=args.port_file,
                source=source,
                phases=phases,
                stop=stop,
                resume_command=f"{again} --resume",
            )
    except (RunStopped, KeyboardInterrupt) as stopped:
        message = stopped_message(stopped, phases.doing)
        print(f"vfl: {message}; {server_next_step(run_dir, again)}", file=sys.stderr)
        return exit_status(stopped)
    if not args.events:
        show_result(summary, run_dir, as_json=args.json, quiet=args.quiet)
    return 0


def _server_predict(args: argparse.Namespace, config: Any, deployment: Any) -> int:
    from vfl.deploy.boost_predicting import predict_boost_deployed
    from vfl.deploy.boost_run import is_boost
    from vfl.deploy.predicting import predict_deployed

    model, data, out = _predict_args(args)
    predict = predict_boost_deployed if is_boost(config) else predict_deployed
    predictions = predict(
        config, deployment, model, data, out=out, force=args.force, port_file=args.port_file
    )
    print(_predicted_line(len(predictions.ids), out, predictions.metrics))
    return 0


def _predicted_line(count: int, out: Path, metrics: dict[str, float] | None) -> str:
    line = f"{count} predictions written to {out}"
    if metrics is not None:
        shown = ", ".join(f"{name} {value:.4f}" for name, value in metrics.items())
        line += f" ({shown} on the labels the rows held)"
    return line


def handle_party(args: argparse.Namespace) -> int:
    """``vfl party``: one holder's process, training or answering with its model bundle."""
    from vfl.deploy.party_config import load_party_config
    from vfl.deploy.stopping import party_stopped
    from vfl.run.signals import Interrupted, exit_status, stop_on_signals

    _log_to_stderr(quiet=args.quiet)
    config = load_party_config(args.config, args.overrides)
    if args.predict or args.serve:
        from vfl.deploy.model_party import run_model_party

        if args.resume or (args.predict and args.serve):
            raise ConfigError("give one of --predict, --serve and --resume")
        run_model_party(
            config, serve=args.serve, data=args.data, model=args.model, server=_dial(args)
        )
        return 0
    from vfl.deploy.party import run_party

    source = repr(str(args.config)) + (" with --set" if args.overrides else "")
    try:
        with stop_on_signals(at_once=True):
            outcome = run_party(config, resume=args.resume, server=_dial(args), source=source)
    except Interrupted as stopped:
        print(f"vfl: {party_stopped(args, config, stopped.reason)}", file=sys.stderr)
        return exit_status(stopped)
    if args.json:
        print(json.dumps(outcome, indent=2))
    else:
        print(f"party {config.party_id}: the run is over; its state is in {config.state_dir}")
    return 0


def _dial(args: argparse.Namespace) -> str:
    """The ``--server`` address, or the local one whose port ``--server-port-file`` gives.

    Waiting comes after the party's modules are loaded, so that they load while the server
    starts.
    """
    if args.server_port_file is None:
        return str(args.server)
    from vfl.deploy.port_file import wait_for_port

    if args.server:
        raise ConfigError("give one of --server and --server-port-file")
    return f"127.0.0.1:{wait_for_port(args.server_port_file, PORT_WAIT_S)}"


def handle_serve(args: argparse.Namespace) -> int:
    """``vfl serve``: the online scoring service, until SIGTERM or SIGINT."""
    from vfl.deploy.config import load_run_config
    from vfl.deploy.serve import serve

    check_argument("--wait-s", args.wait_s, Range(gt=0, le=MAX_WAIT_S))
    _log_to_stderr()
    config, deployment = load_run_config(args.config, args.overrides)
    if args.http_port is not None and not 0 <= args.http_port <= MAX_PORT:
        raise ConfigError(f"--http-port {args.http_port} is out of range; give 0..{MAX_PORT}")
    serve(
        config,
        deployment,
        args.model,
        port_file=args.port_file,
        wait_s=args.wait_s,
        http_port=args.http_port,
        http_port_file=args.http_port_file,
    )
    return 0


def handle_score(args: argparse.Namespace) -> int:
    """``vfl score``: score IDs with a running ``vfl serve`` (no torch)."""
    from vfl.deploy.party_config import PartyTlsConfig
    from vfl.deploy.score_client import score_ids, unscored
    from vfl.deploy.tls import party_tls

    check_argument("--timeout-s", args.timeout_s, Range(gt=0, le=MAX_WAIT_S))
    tls = party_tls(
        PartyTlsConfig(ca=args.ca, cert=args.cert, key=args.key, server_name=args.server_name)
    )
    answer = score_ids(args.address, args.ids, tls, timeout_s=args.timeout_s)
    print(json.dumps(answer, indent=2))
    failed = unscored(answer)
    if failed:
        shown = ", ".join(f"{entry['id']} ({entry['error']})" for entry in failed[:3])
        more = f" and {len(failed) - 3} more" if len(failed) > 3 else ""
        raise SomeWorkFailed(f"{len(failed)} of {len(args.ids)} IDs were not scored: {shown}{more}")
    return 0


def handle_launch(args: argparse.Namespace) -> int:
    """``vfl launch``: the server and every party of one machine, as processes (no torch)."""
    from vfl.deploy.launch import LaunchStopped, PredictArgs, launch
    from vfl.results.files import SUMMARY
    from vfl.run.console import process_age, show_result
    from vfl.run.progress import Progress, Terminal
    from vfl.run.signals import exit_status

    _log_to_stderr(quiet=True)  # the server's reports come as events; warnings only
    predict = None
    if args.predict:
        model, data, out = _predict_args(args)
        predict = PredictArgs(model, data, out, args.force)
    progress = Progress() if args.quiet else Terminal(clock=time.monotonic() - process_age())
    try:
        run_dir = launch(
            args.config,
            run_dir=args.run_dir,
            overrides=args.overrides,
            resume=args.resume,
            predict=predict,
            progress=progress,
        )
    except LaunchStopped as stopped:
        print(f"vfl: {stopped}", file=sys.stderr)
        return exit_status(stopped)
    if predict is None:
        summary = json.loads((run_dir / SUMMARY).read_text())
        show_result(summary, run_dir, as_json=args.json, quiet=args.quiet)
        if not args.quiet:
            print(f"logs in {run_dir / 'logs'}", file=sys.stderr)
    return 0


def handle_certs(args: argparse.Namespace) -> int:
    """``vfl certs``: a test PKI for a deployment."""
    from vfl.deploy.certs import DEFAULT_SERVER_NAMES, create_test_pki

    pki = create_test_pki(
        args.out,
        parties=args.parties,
        server_names=args.server_name or DEFAULT_SERVER_NAMES,
        days=args.days,
        force=args.force,
        clients=args.clients,
    )
    if pki.set_aside is not None:
        print(f"moved the files it replaces, keys included, to {pki.set_aside}")
    print(f"wrote a test CA, a server certificate and {len(pki.parties)} party certificates")
    print(f"and tokens to {args.out}; for RUN.toml:\n")
    for party, files in pki.parties.items():
        print(f'[[deployment.parties]]\nid = {party}\ntoken_sha256 = "{files.token_sha256}"\n')
    return 0


def warnings_as_notes(progress: Progress) -> None:
    """Warnings (logged or warned) also as notes: ``vfl launch`` shows them, not only the log."""

    class Notes(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            progress.note(f"vfl: {record.levelname.lower()}: {record.getMessage()}")

    def note_warning(message: Warning | str, *args: Any, **kwargs: Any) -> None:
        print(f"vfl: warning: {message}", file=sys.stderr)  # the log keeps it too
        progress.note(f"vfl: warning: {message}")

    logging.getLogger().addHandler(Notes(level=logging.WARNING))
    warnings.showwarning = note_warning


def _log_to_stderr(*, quiet: bool = False) -> None:
    """Log with times and module names on standard error: everything, or warnings only."""
    level = logging.WARNING if quiet else logging.INFO
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr)
