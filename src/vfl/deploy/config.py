"""Deployment configs: PARTY.toml, and the ``[deployment]`` table of the server's RUN.toml.

RUN.toml is a normal run config (``vfl.config.RunConfig``) whose ``[data]`` names the server's
labels table (``name = "table"``, ``path``, ``test_path``, ``label``, ``id_column``) plus a
``[deployment]`` table. PARTY.toml names only the party's own files, columns and credentials.
Relative paths in either file (``output.dir`` included) are resolved against the directory of
the file that names them; a path given with ``--set`` is taken as typed. PARTY.toml's sections
live in ``vfl.deploy.party_config`` and are named here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated

from vfl.config import DataConfig, RunConfig
from vfl.config.fields import NonEmpty, Range
from vfl.config.io import (
    check,
    from_mapping,
    merge,
    parse_overrides,
    read_toml,
    with_paths_resolved,
)
from vfl.config.mechanisms import draws_with_a_sampler
from vfl.config.section import Section, rule
from vfl.deploy.party_config import PARTY_ID, check_address
from vfl.deploy.party_config import PartyConfig as PartyConfig
from vfl.deploy.party_config import PartyDataConfig as PartyDataConfig
from vfl.deploy.party_config import PartyPrivacyConfig as PartyPrivacyConfig
from vfl.deploy.party_config import PartyTlsConfig as PartyTlsConfig
from vfl.deploy.party_config import load_party_config as load_party_config
from vfl.errors import ConfigError
from vfl.transport.retry import RetryPolicy
from vfl.transport.security import PartyCredential


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


_RUN_PATHS = {
    "data": ("path", "test_path"),
    "output": ("dir",),
    "deployment.tls": ("cert", "key", "ca"),
}


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
            draws_with_a_sampler(config.privacy.mechanism) and config.privacy.sampler != "chacha",
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
