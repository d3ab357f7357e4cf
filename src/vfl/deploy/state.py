"""A party's state directory: its alignments and its per-epoch checkpoints.

Layout::

    STATE_DIR/
      alignment-<id>.pt      own row positions per split, in the run's canonical order
      checkpoint-<round>.pt  the role's state (model, optimizer, last round) after an epoch
      releases.bin           every release of training rows (deploy.releases; unless
                             PARTY.toml's privacy.journal_dir puts it elsewhere)
      wire.json              bytes this party really sent and received

Checkpoints are named by the server's round counter at the end of an epoch, so that the server
can name the one to restore; the newest ``KEEP_CHECKPOINTS`` are kept, which covers a server
that died after the parties saved an epoch but before it saved its own. Each checkpoint keeps
the PARTY.toml values that decide what the party computes (``FIXED_KEYS``), so that a resumed
party refuses an edited PARTY.toml as ``vfl run --resume`` refuses an edited config.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import torch

from vfl.config.fields import show
from vfl.deploy.alignment import Alignment
from vfl.deploy.party_config import PartyConfig
from vfl.errors import ConfigError

KEEP_CHECKPOINTS = 3
FIXED_KEYS = (
    "party_id",
    "data.train",
    "data.test",
    "data.id_column",
    "data.columns",
    "data.categorical",
    "data.bad_numbers",
    "privacy.journal_dir",
)
"""PARTY.toml keys a resumed party may not change: its identity, the rows and columns it trains
on and how they are read, and where it counts its releases (a new place would start a new
count). The others (server address, credentials, timeouts, threads, device, audit log, budget)
change how the party connects, runs or limits itself, not what a round computes."""
SETTINGS = "party"
"""The checkpoint entry holding the ``FIXED_KEYS`` values (JSON)."""
_CHECKPOINT = re.compile(r"checkpoint-(\d+)\.pt")


class PartyState:
    """Reads and writes one party's state directory.

    Args:
        directory: The directory (created if missing).
        resume: Continue a previous run; without it, a directory that holds one (a checkpoint)
            is refused.
    """

    def __init__(self, directory: Path, *, resume: bool) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        # Its alignment alone is no run to keep: the run stopped before its first checkpoint (in
        # PSI, or before the first tree or round was saved), and a new run aligns again.
        previous = [p.name for p in self.directory.glob("checkpoint-*.pt")]
        if previous and not resume:
            raise ConfigError(
                f"state directory {str(self.directory)!r} holds a previous run ({len(previous)}"
                " files); continue it with --resume or choose another state_dir"
            )

    def save_alignment(self, alignment: Alignment) -> None:
        """Keep an alignment under its id."""
        alignment.save(self._alignment_path(alignment.id))

    def load_alignment(self, alignment_id: str) -> Alignment:
        """The alignment saved under ``alignment_id``.

        Raises:
            ConfigError: if there is none (the party was aligned with another state directory).
        """
        path = self._alignment_path(alignment_id)
        if not path.exists():
            raise ConfigError(
                f"no alignment {alignment_id!r} in {str(self.directory)!r}: restart the party"
                " with the state_dir it used when the run started (and --resume)"
            )
        return Alignment.load(path)

    def save_checkpoint(self, round_: int, state: dict[str, Any]) -> None:
        """Save the role's state as of ``round_`` and drop all but the newest checkpoints."""
        target = self.directory / f"checkpoint-{round_}.pt"
        temporary = target.with_name(target.name + ".tmp")
        torch.save(state, temporary)
        os.replace(temporary, target)
        for old in self.checkpoint_rounds()[:-KEEP_CHECKPOINTS]:
            (self.directory / f"checkpoint-{old}.pt").unlink(missing_ok=True)

    def load_checkpoint(self, round_: int) -> dict[str, Any]:
        """The state saved at ``round_``.

        Raises:
            ConfigError: naming the rounds that are available.
        """
        path = self.directory / f"checkpoint-{round_}.pt"
        if not path.exists():
            raise ConfigError(
                f"no checkpoint for round {round_} in {str(self.directory)!r} (have rounds"
                f" {self.checkpoint_rounds()}); restart the party with its own state_dir and"
                " --resume"
            )
        # on the CPU: a party saved on CUDA restarts on another device (PARTY.toml device)
        state: dict[str, Any] = torch.load(path, weights_only=True, map_location="cpu")
        return state

    def checkpoint_rounds(self) -> list[int]:
        """Rounds of the saved checkpoints, ascending."""
        return checkpoint_rounds(self.directory)

    def _alignment_path(self, alignment_id: str) -> Path:
        if not alignment_id.isalnum():
            raise ConfigError(f"invalid alignment id {alignment_id!r}")
        return self.directory / f"alignment-{alignment_id}.pt"


def party_settings(config: PartyConfig) -> str:
    """The values of ``FIXED_KEYS`` in ``config``, as JSON (kept in every checkpoint)."""
    values = {}
    for key in FIXED_KEYS:
        value: object = config
        for part in key.split("."):
            value = getattr(value, part)
        values[key] = list(value) if isinstance(value, tuple) else value
    return json.dumps(values, sort_keys=True)


def check_party_unchanged(state: PartyState, settings: str, source: str) -> None:
    """Refuse to resume with ``settings`` where they differ from the newest checkpoint's.

    Checkpoints of versions that kept no settings, and a state directory without any, pass.

    Raises:
        ConfigError: naming every changed key, its old and new value, and ``source``.
    """
    rounds = state.checkpoint_rounds()
    if not rounds:
        return
    saved = state.load_checkpoint(rounds[-1]).get(SETTINGS)
    if not isinstance(saved, str):
        return
    old, new = json.loads(saved), json.loads(settings)
    changed = [
        f"{key} ({show(old.get(key))} -> {show(new.get(key))})"
        for key in FIXED_KEYS
        if key in old and old.get(key) != new.get(key)
    ]
    if changed:
        raise ConfigError(
            f"{source} differs from the one the checkpoints in {str(state.directory)!r} were"
            f" trained with in {', '.join(changed)}; these cannot change on resume: undo the"
            " change, or start a new run with another state_dir"
        )


def checkpoint_rounds(directory: Path) -> list[int]:
    """Rounds of the checkpoints saved in the state directory ``directory``, ascending."""
    rounds = []
    for path in directory.glob("checkpoint-*.pt"):
        match = _CHECKPOINT.fullmatch(path.name)
        if match:
            rounds.append(int(match.group(1)))
    return sorted(rounds)
