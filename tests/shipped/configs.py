"""Every configuration file the repository ships, by kind, and how each kind is resolved.

A shipped TOML file is one of four kinds, told apart by its content: a sweep file (it names a
``base``), a deployment's RUN.toml (a ``[deployment]`` table), a PARTY.toml (a ``party_id``) or
a run config (anything else, attack configs included). Each is resolved by the loader the
command that reads it uses, so a file that parses but names an unknown key, a bad value or a
missing base fails here as it would fail for a user.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from vfl.config import load_config
from vfl.config.io import read_toml
from vfl.deploy.config import load_party_config, load_run_config
from vfl.errors import ConfigError
from vfl.experiments.plan import plan
from vfl.experiments.spec import read_sweep

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_FOLDERS = ("examples", "experiments", "bench", "tools")
"""Where configs ship; a run's saved ``config.toml`` under a ``results`` folder is a record
(``tests/experiments/test_committed_runs.py`` checks those)."""


def shipped_configs() -> list[Path]:
    """Every TOML file under ``SHIPPED_FOLDERS``, but for saved results."""
    found = []
    for folder in SHIPPED_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.toml")):
            if "results" not in path.relative_to(ROOT).parts:
                found.append(path)
    return found


def kind_of(raw: dict[str, object]) -> str:
    """``sweep``, ``deployment``, ``party`` or ``run``: which command reads a file like ``raw``."""
    if "base" in raw:
        return "sweep"
    if "deployment" in raw:
        return "deployment"
    if "party_id" in raw:
        return "party"
    return "run"


def _sweep(path: Path) -> None:
    plan(read_sweep(path))  # every run's config, resolved against the schema


def _deployment(path: Path) -> None:
    _, deployment = load_run_config(path)
    for entry in deployment.parties:
        if not entry.config:
            continue
        party = load_party_config(Path(entry.config))
        if party.party_id != entry.id:
            raise ConfigError(
                f"{path}: [[deployment.parties]] id {entry.id} names {entry.config}, whose"
                f" party_id is {party.party_id}"
            )


RESOLVERS: dict[str, Callable[[Path], object]] = {
    "sweep": _sweep,
    "deployment": _deployment,
    "party": load_party_config,
    "run": load_config,
}


def resolve(path: Path) -> str:
    """Resolve ``path`` as the command that reads it would; returns its kind.

    Raises:
        ConfigError: naming the file and what is wrong with it.
    """
    kind = kind_of(read_toml(path))
    RESOLVERS[kind](path)
    return kind
