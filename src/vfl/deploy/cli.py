"""The deployment subcommands: ``server``, ``party``, ``launch``, ``serve``, ``score``, ``certs``.

``vfl.cli`` adds them with ``register(subparsers)``; this module parses, and each command's
handler is in ``vfl.deploy.commands``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vfl.deploy import commands as handlers


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
    server.set_defaults(handler=handlers.handle_server)

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
    party.set_defaults(handler=handlers.handle_party)

    launch = commands.add_parser("launch", help="run a deployment as local processes")
    launch.add_argument("config", type=Path, help="RUN.toml naming each party's PARTY.toml")
    launch.add_argument("--run-dir", type=Path, help="results (default: output.dir/...)")
    launch.add_argument("--resume", action="store_true", help="resume the server and parties")
    _console(launch)
    _prediction(launch, party=False)
    _overrides(launch)
    launch.set_defaults(handler=handlers.handle_launch)

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
    serve.set_defaults(handler=handlers.handle_serve)

    score = commands.add_parser("score", help="ask vfl serve to score IDs; prints its JSON answer")
    score.add_argument("address", help="host:port of vfl serve")
    score.add_argument("ids", nargs="+", help="the IDs to score")
    score.add_argument("--ca", required=True, help="the deployment's CA certificate")
    score.add_argument("--cert", required=True, help="a client certificate (client-<name>)")
    score.add_argument("--key", required=True, help="its private key")
    score.add_argument("--server-name", default="", help="the name the server's certificate has")
    score.add_argument(
        "--timeout-s",
        type=float,
        default=30.0,
        help="seconds to wait for the server's answer, connecting included (default: 30)",
    )
    score.set_defaults(handler=handlers.handle_score)

    certs = commands.add_parser("certs", help="create a test CA, certificates and party tokens")
    certs.add_argument("--out", type=Path, required=True, help="directory for the files")
    certs.add_argument(
        "--parties",
        type=int,
        nargs="+",
        required=True,
        metavar="ID",
        help="party IDs as in RUN.toml (party-ID.pem, .key and .token each)",
    )
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
    certs.set_defaults(handler=handlers.handle_certs)


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


def _overrides(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value (repeatable)",
    )
