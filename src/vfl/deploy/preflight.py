"""What ``vfl launch`` checks before it starts a process: the configs, TLS files, party state.

Each process checks its own config again when it starts; checking here too turns a mistake
that would surface after every process has imported torch and the server has waited for its
parties (seconds) into one line at once, before a log folder is made.
"""

from __future__ import annotations

from pathlib import Path

from vfl.deploy.config import DeploymentConfig, PartyConfig, load_party_config
from vfl.deploy.tls import party_tls, server_tls
from vfl.errors import ConfigError


def checked_parties(deployment: DeploymentConfig) -> dict[int, PartyConfig]:
    """Every party's PARTY.toml, read and checked with its TLS files, and the server's TLS files.

    Args:
        deployment: RUN.toml's ``[deployment]`` table (each party's ``config`` absolute).

    Raises:
        ConfigError: naming the PARTY.toml and its key, or the TLS key and file.
    """
    server_tls(deployment.tls)
    parties = {}
    for entry in deployment.parties:
        try:
            parties[entry.id] = load_party_config(Path(entry.config))
            party_tls(parties[entry.id].tls)
        except ConfigError as error:
            raise ConfigError(f"{entry.config}: {error}") from None
    return parties


def check_no_previous_run(parties: dict[int, PartyConfig], again: str, run_dir: Path) -> None:
    """Refuse a new training run where a party's ``state_dir`` holds a previous one.

    The run folder was checked first: it holds no run, so the parties' run is one whose folder
    is elsewhere (moved, or launched with another ``--run-dir``).

    Args:
        parties: Each party's config, by id.
        again: This launch's command line, for the message that names how to go on.
        run_dir: This launch's run folder (new).

    Raises:
        ConfigError: naming the state directories and what to do.
    """
    held = {
        party_id: party.state_dir
        for party_id, party in parties.items()
        if any(Path(party.state_dir).glob("checkpoint-*.pt"))  # as the party itself checks
    }
    if not held:
        return
    folders = ", ".join(repr(folder) for folder in held.values())
    raise ConfigError(
        f"the state directories of parties {sorted(held)} hold a previous run ({folders}) whose"
        f" run folder is not '{run_dir}' (moved, or launched with another --run-dir): to"
        f" continue it, run `{again}` with that run's `--run-dir` and `--resume`; for a new run,"
        " give each party a new state_dir in its PARTY.toml (or move the folders aside); where"
        " privacy.journal_dir is empty the release journal is in state_dir: point journal_dir"
        " at it, so that the new run's releases add to the same count"
    )
