"""PARTY.toml: one party's own files, columns, credentials and privacy budget.

Relative paths are resolved against the directory of PARTY.toml; a path given with ``--set`` is
taken as typed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

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

PARTY_ID = Range(ge=1, note="party ids start at 1")


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


def load_party_config(path: Path, overrides: Sequence[str] = ()) -> PartyConfig:
    """Read PARTY.toml with ``key=value`` overrides; relative paths are made absolute.

    Raises:
        ConfigError: naming the offending key.
    """
    raw = with_paths_resolved(read_toml(path), _PARTY_PATHS, path.parent)
    return from_mapping(PartyConfig, merge(raw, parse_overrides(overrides)))
