"""Deployment configs: PARTY.toml, and the ``[deployment]`` table of the server's RUN.toml.

RUN.toml is a normal run config (``vfl.config.RunConfig``) whose ``[data]`` names the server's
labels table (``name = "table"``, ``path``, ``test_path``, ``label``, ``id_column``) plus a
``[deployment]`` table. PARTY.toml names only the party's own files, columns and credentials.
Relative paths in either file (``output.dir`` included) are resolved against the directory of
the file that names them; a path given with ``--set`` is taken as typed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Literal

from vfl.config import DataConfig, RunConfig
from vfl.config.arguments import MAX_THREADS
from vfl.config.fields import NonEmpty, Range
from vfl.config.io import (
    FieldError,
    check,
    from_mapping,
    merge,
    parse_overrides,
    read_toml,
    with_paths_resolved,
)
from vfl.config.section import Section, rule
from vfl.errors import ConfigError
from vfl.transport.address import split_address
from vfl.transport.retry import RetryPolicy
from vfl.transport.security import PartyCredential

PARTY_ID = Range(ge=1, note="party ids start at 1")


@dataclass(frozen=True)
class ServerTlsConfig(Section):
    """The server's TLS files (PEM).

    Attributes:
        cert: The server certificate; its names must include the host parties dial.
        key: Its private key.
        ca: The CA that signs party certificates (needed for mutual TLS).
        mutual: Require a client certificate naming ``party-<id>`` from every party.
    """

    cert: Annotated[str, NonEmpty("TLS is required: give the server certificate file")] = ""
    key: Annotated[str, NonEmpty("TLS is required: give the server's private key file")] = ""
    ca: str = ""
    mutual: bool = False


@rule(ServerTlsConfig)
def _mutual_tls_needs_a_ca(tls: ServerTlsConfig) -> None:
    check(not tls.mutual or bool(tls.ca), "ca", "mutual TLS needs the party CA file")


@dataclass(frozen=True)
class PartyEntry(Section):
    """One party of the run, as the server knows it.

    Attributes:
        id: Party id, 1..M.
        token_sha256: Hex SHA-256 of its token (``vfl certs`` prints it); empty if it
            authenticates by client certificate alone.
        config: Its PARTY.toml, used only by ``vfl launch`` on one machine.
    """

    id: Annotated[int, PARTY_ID] = 0
    token_sha256: str = ""
    config: str = ""


@rule(PartyEntry)
def _token_is_a_digest(entry: PartyEntry) -> None:
    PartyCredential(entry.token_sha256)  # raises ConfigError unless the digest is well formed


@dataclass(frozen=True)
class DeploymentConfig(Section):
    """The ``[deployment]`` table of RUN.toml.

    Attributes:
        listen: ``host:port`` the server listens on.
        tls: The server's TLS files.
        parties: Every party of the run (``[[deployment.parties]]``).
        connect_timeout_s: How long to wait for all parties to connect (also after a failure).
        request_timeout_s: How long to wait for each reply before asking again.
        setup_timeout_s: The same for alignment, setup and checkpoint requests, which take
            longer (PSI blinds every ID; setup encodes the party's table).
        attempts: Times a request is sent before its party counts as failed.
        reconnect_s: How long a party whose stream broke may take to reconnect before its
            open request fails.
        backoff_s: Delay before the first retry; doubles each retry.
        max_backoff_s: Cap on the retry delay.
        max_recoveries: Times a run rolls back to its last checkpoint after a party restart.
        keepalive_s: Keepalive ping interval on idle streams.
        max_message_mib: Largest message accepted, in MiB.
    """

    listen: str = "0.0.0.0:50051"
    tls: ServerTlsConfig = field(default_factory=ServerTlsConfig)
    parties: Annotated[
        tuple[PartyEntry, ...], NonEmpty("list every party in [[deployment.parties]]")
    ] = ()
    connect_timeout_s: Annotated[float, Range(gt=0)] = 600.0
    request_timeout_s: float = 60.0
    setup_timeout_s: Annotated[float, Range(gt=0)] = 600.0
    attempts: int = 3
    reconnect_s: float = 15.0
    backoff_s: float = 0.5
    max_backoff_s: float = 10.0
    max_recoveries: Annotated[int, Range(ge=0)] = 3
    keepalive_s: Annotated[float, Range(ge=1)] = 20.0
    max_message_mib: Annotated[int, Range(ge=1)] = 256

    def retry_policy(self) -> RetryPolicy:
        """The transport's timeouts and retries."""
        return RetryPolicy(
            attempts=self.attempts,
            timeout_s=self.request_timeout_s,
            backoff_s=self.backoff_s,
            max_backoff_s=self.max_backoff_s,
            reconnect_s=self.reconnect_s,
        )

    def credentials(self) -> dict[int, PartyCredential]:
        """What authenticates each party."""
        return {p.id: PartyCredential(p.token_sha256) for p in self.parties}


@rule(DeploymentConfig)
def _listen_is_an_address(deployment: DeploymentConfig) -> None:
    check_address(deployment.listen, "listen", listen=True)


@rule(DeploymentConfig)
def _parties_are_distinct_and_authenticated(deployment: DeploymentConfig) -> None:
    ids = [p.id for p in deployment.parties]
    check(len(set(ids)) == len(ids), "parties", f"party ids must be distinct, got {ids}")
    for party in deployment.parties:
        check(
            bool(party.token_sha256) or deployment.tls.mutual,
            "parties",
            f"party {party.id} needs a token_sha256 unless tls.mutual = true",
        )


@rule(DeploymentConfig)
def _retries_are_valid(deployment: DeploymentConfig) -> None:
    deployment.retry_policy()  # RetryPolicy checks attempts, timeouts and backoffs together


@dataclass(frozen=True)
class PartyDataConfig(Section):
    """A party's own data: one table per split (CSV or Parquet).

    Attributes:
        train: The training rows.
        test: The test rows.
        id_column: The column of sample IDs matched against the other holders by PSI.
        columns: The feature columns; empty for every column except ``id_column``.
        categorical: Columns to one-hot encode; empty to infer them from the column types.
        bad_numbers: What a cell that is not a number is in a column whose filled cells are at
            least 95 % numbers: ``error`` stops naming the file, column, line and value;
            ``missing`` reads it as a missing value (``vfl.data.numbers``).
        predict: The new rows of a batch prediction (``vfl party --predict``; ``--data``
            overrides it).
        serve: The current table online scoring looks IDs up in (``vfl party --serve``): CSV
            or Parquet, read again when it changes, or a SQLite database (``.db``, ``.sqlite``,
            ``.sqlite3``).
        sqlite_table: The table of that SQLite database.
    """

    train: Annotated[str, NonEmpty("name the party's training table")] = ""
    test: Annotated[str, NonEmpty("name the party's test table")] = ""
    id_column: Annotated[str, NonEmpty("name the ID column that PSI aligns on")] = ""
    columns: tuple[str, ...] = ()
    categorical: tuple[str, ...] = ()
    bad_numbers: Literal["error", "missing"] = "error"
    predict: str = ""
    serve: str = ""
    sqlite_table: Annotated[str, NonEmpty("name the SQLite table of the rows")] = "features"


@rule(PartyDataConfig)
def _id_column_is_not_a_feature(data: PartyDataConfig) -> None:
    check(data.id_column not in data.columns, "columns", "must not include the ID column")


@dataclass(frozen=True)
class PartyTlsConfig(Section):
    """A party's TLS files (PEM).

    Attributes:
        ca: The CA that signed the server's certificate.
        cert: This party's certificate, for mutual TLS.
        key: Its private key.
        server_name: Name to check in the server certificate instead of the dialed host.
    """

    ca: Annotated[str, NonEmpty("TLS is required: give the CA that signed the server")] = ""
    cert: str = ""
    key: str = ""
    server_name: str = ""


@rule(PartyTlsConfig)
def _certificate_has_its_key(tls: PartyTlsConfig) -> None:
    check(bool(tls.cert) == bool(tls.key), "key", "a certificate needs its key")


@dataclass(frozen=True)
class PartyPrivacyConfig(Section):
    """A party's own privacy budget, whatever the server's config says.

    In VFL-PBM runs the party counts every release of each sample of its training table itself,
    by sample ID, across restarts, alignments, runs and edits of the table
    (``journal_dir/releases.bin``), and logs its epsilon after every epoch; a run without PBM is
    recorded too (its rows' epsilon is infinite).

    Attributes:
        max_epsilon: Refuse a release that would take a row past this epsilon, and any run
            without PBM; 0 counts and reports without a limit.
        delta: The delta of the party's epsilon.
        parties: Count on at most this many parties' noise: 0 on every party of the secure sum
            as the server announces it (as the server's accountant does), 1 on the party's own
            noise alone (should the server add parties of its own, or the others collude).
        journal_dir: Where the release journal lives (empty: ``state_dir``); point every run
            over the same people at one folder, so that their counts add up.
    """

    max_epsilon: Annotated[float, Range(ge=0, note="0 = no limit")] = 0.0
    delta: Annotated[float, Range(gt=0, lt=1)] = 1e-5
    parties: Annotated[int, Range(ge=0, note="0 = every party of the secure sum")] = 0
    journal_dir: str = ""


@dataclass(frozen=True)
class PartyConfig(Section):
    """PARTY.toml: everything one party's process needs.

    Attributes:
        party_id: This party's id, 1..M.
        server: The server's ``host:port``.
        state_dir: Where the party keeps its alignment and checkpoints.
        token_file: A file holding the party's token (empty: certificate only).
        data: The party's tables.
        tls: The party's TLS files.
        give_up_s: Seconds without the server after which the process exits.
        keepalive_s: Keepalive ping interval on an idle stream.
        threads: CPU threads for torch's operations in this process (0: torch's default).
        device: Where this party's bottom model trains and embeds (``cpu``, ``cuda``, ``mps`` or
            ``auto``), whatever the run's ``train.device`` says; empty: the run's choice (the CPU
            when predicting from a bundle). Each
            organisation knows its own hardware; the results a party sends do not depend on it
            beyond floating-point rounding.
        audit_log: If set, a JSONL file recording every message received (control messages
            in full), for audits of what the party learned.
        model: The party's model bundle, for ``--predict`` and ``--serve`` (default:
            ``state_dir/bundle/party-<id>``, where training exported it).
        privacy: The party's own privacy budget (VFL-PBM runs).
    """

    party_id: Annotated[int, PARTY_ID] = 0
    server: Annotated[str, NonEmpty("name the server's host:port, e.g. localhost:50051")] = ""
    state_dir: Annotated[str, NonEmpty("name a directory for alignment and checkpoints")] = ""
    token_file: str = ""
    data: PartyDataConfig = field(default_factory=PartyDataConfig)
    tls: PartyTlsConfig = field(default_factory=PartyTlsConfig)
    give_up_s: Annotated[float, Range(gt=0)] = 600.0
    keepalive_s: float = 20.0
    threads: Annotated[int, Range(ge=0, le=MAX_THREADS, note="0 = torch's default")] = 0
    device: Literal["", "auto", "cpu", "cuda", "mps"] = ""
    audit_log: str = ""
    model: str = ""
    privacy: PartyPrivacyConfig = field(default_factory=PartyPrivacyConfig)


@rule(PartyConfig)
def _server_is_an_address(config: PartyConfig) -> None:
    check_address(config.server, "server")


def check_address(address: str, key: str, *, listen: bool = False) -> None:
    """Raise ``FieldError(key, ...)`` unless ``address`` is ``host:port`` with a valid port.

    ``listen``: an address to listen on, where port 0 picks a free port.
    """
    try:
        split_address(address, listen=listen)
    except ConfigError as error:
        raise FieldError(key, str(error)) from None


_PARTY_PATHS = {
    "": ("state_dir", "token_file", "audit_log", "model"),
    "data": ("train", "test", "predict", "serve"),
    "tls": ("ca", "cert", "key"),
    "privacy": ("journal_dir",),
}
_RUN_PATHS = {
    "data": ("path", "test_path"),
    "output": ("dir",),
    "deployment.tls": ("cert", "key", "ca"),
}


def load_party_config(path: Path, overrides: Sequence[str] = ()) -> PartyConfig:
    """Read PARTY.toml with ``key=value`` overrides; relative paths are made absolute.

    Raises:
        ConfigError: naming the offending key.
    """
    raw = with_paths_resolved(read_toml(path), _PARTY_PATHS, path.parent)
    return from_mapping(PartyConfig, merge(raw, parse_overrides(overrides)))


def load_run_config(
    path: Path, overrides: Sequence[str] = ()
) -> tuple[RunConfig, DeploymentConfig]:
    """Read the server's RUN.toml: the run config and its ``[deployment]`` table.

    The ``[partition]`` table only records the number of parties in a deployment; it is filled
    in from the party list when absent.

    Raises:
        ConfigError: naming the offending key, or a run config a deployment cannot run.
    """
    raw = with_paths_resolved(read_toml(path), _RUN_PATHS, path.parent)
    if "deployment" not in raw:
        raise ConfigError(f"{path} has no [deployment] table; see docs/deployment.md")
    parties = raw["deployment"].get("parties", ()) if isinstance(raw["deployment"], dict) else ()
    for entry in parties:
        if isinstance(entry, dict) and entry.get("config"):
            entry["config"] = str(path.parent / entry["config"])
    raw = merge(raw, parse_overrides(overrides))
    table = raw.pop("deployment")
    deployment = from_mapping(DeploymentConfig, table, path="deployment")
    raw.setdefault("partition", {"scheme": "contiguous", "num_parties": len(deployment.parties)})
    config = from_mapping(RunConfig, raw)
    check_deployable(config, deployment)
    return config, deployment


def check_deployable(config: RunConfig, deployment: DeploymentConfig) -> None:
    """Raise ``ConfigError`` unless the run config fits a deployment."""
    data = config.data
    problems = [
        (data.name != "table", f"data.name must be 'table' (the labels file), got {data.name!r}"),
        (not data.id_column, "data.id_column must name the ID column of the labels file"),
        (not data.test_path, "data.test_path must name the labels of the test rows"),
        (config.protocol.mode != "vfl", "protocol.mode must be 'vfl' in a deployment"),
        (
            config.protocol.active_party != 0,
            "protocol.active_party must be 0 in a deployment: the server holds labels only",
        ),
        (
            config.privacy.randomness == "seeded",
            "privacy.randomness = 'seeded' is refused in a deployment: the server chooses"
            " train.seed, so it could regenerate every party's noise; use 'auto' or 'os'",
        ),
        (
            config.privacy.mechanism == "pbm" and config.privacy.sampler != "chacha",
            f"privacy.sampler = {config.privacy.sampler!r} is refused in a deployment: only"
            " 'chacha' draws the noise from a cryptographic generator (the 'torch' sampler"
            " exists to repeat old simulation runs)",
        ),
        (
            config.privacy.max_epsilon > 0,
            "privacy.max_epsilon is not enforced by a deployed server: each party enforces its"
            " own budget (privacy.max_epsilon in its PARTY.toml, docs/deployment.md); drop it"
            " from the server's config",
        ),
        (
            config.partition.num_parties != len(deployment.parties),
            f"partition.num_parties is {config.partition.num_parties} but"
            f" [[deployment.parties]] lists {len(deployment.parties)}",
        ),
    ]
    for failed, message in problems:
        if failed:
            raise ConfigError(message)


def party_view(config: RunConfig) -> RunConfig:
    """The run config a party receives: without the server's data paths and output settings."""
    return replace(config, data=DataConfig(), output=replace(config.output, dir="", name=""))
