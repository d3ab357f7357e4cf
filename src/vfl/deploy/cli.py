"""The deployment subcommands: ``server``, ``party``, ``launch`` and ``certs`` (parse + dispatch).

``vfl.cli`` adds them with ``register(subparsers)``.
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


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the deployment subcommands to an ``argparse`` subparsers object."""
    server = commands.add_parser("server", help="run the server (label holder) of a deployment")
    server.add_argument("--config", type=Path, required=True, help="RUN.toml")
    server.add_argument("--run-dir", type=Path, help="results (default: output.dir/...)")
    server.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    server.add_argument("--port-file", type=Path, help="write the listening port here")
    _console(server)
    server.add_argument("--events", action="store_true", help=argparse.SUPPRESS)  # vfl launch's
    _prediction(server, party=False)
    _overrides(server)
    server.set_defaults(handler=_server)

    party = commands.add_parser("party", help="run one party of a deployment")
    party.add_argument("--config", type=Path, required=True, help="PARTY.toml")
    party.add_argument("--resume", action="store_true", help="continue with the state_dir's run")
    party.add_argument("--server", default="", help="dial this host:port instead of the config's")
    party.add_argument(
        "--server-port-file",
        type=Path,
        help="dial 127.0.0.1 at the port a local server writes here (vfl launch)",
    )
    _console(party)
    _prediction(party, party=True)
    _overrides(party)
    party.set_defaults(handler=_party)

    launch = commands.add_parser("launch", help="run a deployment as local processes")
    launch.add_argument("config", type=Path, help="RUN.toml naming each party's PARTY.toml")
    launch.add_argument("--run-dir", type=Path, help="results (default: output.dir/...)")
    launch.add_argument("--resume", action="store_true", help="resume the server and parties")
    _console(launch)
    _prediction(launch, party=False)
    _overrides(launch)
    launch.set_defaults(handler=_launch)

    serve = commands.add_parser(
        "serve", help="label holder: online scoring with a trained model (docs/predict.md)"
    )
    serve.add_argument("--config", type=Path, required=True, help="RUN.toml of the deployment")
    serve.add_argument("--model", type=Path, required=True, help="the trained run's directory")
    serve.add_argument("--port-file", type=Path, help="write the listening port here")
    serve.add_argument(
        "--wait-s",
        type=float,
        default=5.0,
        help="how long a request waits for a party that is not connected (default: 5)",
    )
    serve.add_argument(
        "--http-port",
        type=int,
        help="also answer POST /v1/score (JSON) over HTTPS on this port (0: a free one)",
    )
    serve.add_argument("--http-port-file", type=Path, help="write the HTTP port here")
    _overrides(serve)
    serve.set_defaults(handler=_serve)

    score = commands.add_parser("score", help="ask vfl serve to score IDs; prints its JSON answer")
    score.add_argument("address", help="host:port of vfl serve")
    score.add_argument("ids", nargs="+", help="the IDs to score")
    score.add_argument("--ca", required=True, help="the deployment's CA certificate")
    score.add_argument("--cert", required=True, help="a client certificate (client-<name>)")
    score.add_argument("--key", required=True, help="its private key")
    score.add_argument("--server-name", default="", help="the name the server's certificate has")
    score.add_argument("--timeout-s", type=float, default=30.0, help="(default: 30)")
    score.set_defaults(handler=_score)

    certs = commands.add_parser("certs", help="create a test CA, certificates and party tokens")
    certs.add_argument("--out", type=Path, required=True, help="directory for the files")
    certs.add_argument("--parties", type=int, nargs="+", required=True, metavar="ID")
    certs.add_argument(
        "--server-name",
        action="append",
        default=[],
        help="DNS name or IP the parties dial (repeatable; default: localhost and 127.0.0.1)",
    )
    certs.add_argument("--days", type=int, default=30, help="validity (default: 30)")
    certs.add_argument(
        "--clients",
        nargs="+",
        default=[],
        metavar="NAME",
        help="also certificates client-NAME for callers of vfl serve's scoring API",
    )
    certs.add_argument(
        "--force",
        action="store_true",
        help="replace files already in --out (they are moved to a replaced-<time> folder)",
    )
    certs.set_defaults(handler=_certs)


def _console(parser: argparse.ArgumentParser) -> None:
    """``--quiet`` and ``--json``, as ``vfl run`` has them."""
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no phases, epoch lines or progress bar (warnings only): print one final line",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the whole summary (summary.json) on stdout"
    )


def _prediction(parser: argparse.ArgumentParser, *, party: bool) -> None:
    """The options of batch prediction (and, for a party, online scoring)."""
    group = parser.add_argument_group("prediction with a trained model (docs/predict.md)")
    group.add_argument("--predict", action="store_true", help="predict for new rows; no training")
    if party:
        group.add_argument(
            "--serve", action="store_true", help="answer the online scoring service (vfl serve)"
        )
        group.add_argument(
            "--data", default="", help="the party's new table (default: data.predict/data.serve)"
        )
        group.add_argument(
            "--model", default="", help="its bundle (default: state_dir/bundle/party-<id>)"
        )
        return
    group.add_argument("--model", type=Path, help="the trained run's directory (holds bundle/)")
    group.add_argument("--data", type=Path, help="the new IDs (CSV/Parquet; labels optional)")
    group.add_argument("--out", type=Path, help="predictions CSV (default: MODEL/predictions.csv)")
    group.add_argument("--force", action="store_true", help="replace existing prediction files")


def _predict_args(args: argparse.Namespace) -> tuple[Path, Path, Path]:
    """``--model``, ``--data`` and ``--out`` of a batch prediction, checked."""
    if args.resume or getattr(args, "run_dir", None) is not None:
        raise ConfigError("--predict does not train: drop --resume and --run-dir")
    if args.model is None or args.data is None:
        raise ConfigError("--predict needs --model RUN_DIR (the trained run) and --data NEW_IDS")
    return args.model, args.data, args.out or args.model / "predictions.csv"


def _overrides(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value (repeatable)",
    )


def _server(args: argparse.Namespace) -> int:
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
        _warnings_as_notes(progress)
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
    from vfl.deploy.predicting import predict_deployed

    model, data, out = _predict_args(args)
    predictions = predict_deployed(
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


def _party(args: argparse.Namespace) -> int:
    from vfl.deploy.config import load_party_config
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


def _serve(args: argparse.Namespace) -> int:
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


def _score(args: argparse.Namespace) -> int:
    from vfl.deploy.config import PartyTlsConfig
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


def _launch(args: argparse.Namespace) -> int:
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


def _certs(args: argparse.Namespace) -> int:
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


def _warnings_as_notes(progress: Progress) -> None:
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
