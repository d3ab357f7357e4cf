"""A deployed run's folder: what the server writes in it before training, and its checks.

Light to import (no torch): ``vfl launch`` checks the folder before it starts any process.
"""

from __future__ import annotations

from pathlib import Path

from vfl.config import RunConfig
from vfl.errors import ConfigError
from vfl.results.files import CHECKPOINT, CONFIG, ERROR, TRACEBACK, RunDirectory, check_new

LOGS = "logs"
"""The folder of the processes' logs (``vfl launch``)."""
ALIGNMENT = "alignment.pt"
DEPLOYMENT = "deployment.toml"
WIRE = "wire.json"
SET_UP_FILES = (ERROR, TRACEBACK, WIRE, ALIGNMENT, CONFIG, DEPLOYMENT)
"""What a server writes before its first checkpoint: a new run may replace them."""
NEW_RUN = (
    "for a new run choose another --run-dir and give each party a new state_dir in its"
    " PARTY.toml (or move the run folder and the parties' state folders aside)"
)
"""How a new deployed run starts beside an old one: the parties' state holds the old run too."""


def check_run_directory(
    run_dir: Path,
    resume: bool,
    resume_command: str = "",
    *,
    config: RunConfig | None = None,
    source: str = "",
) -> RunDirectory:
    """The run's folder, checked before anything is written.

    A new run's must be missing or empty (nothing a user made is replaced); a folder in which an
    earlier attempt stopped before its first checkpoint (while waiting for parties, in PSI) holds
    only what the server writes in its set-up: a new run replaces it. ``resume_command`` is the
    command that continues a run found there. A resumed one must hold a deployed run whose
    checkpoint ``config`` (read from ``source``) may continue, as ``vfl run --resume``: only
    ``RESUMABLE_KEYS`` may differ.

    Raises:
        ConfigError: if ``run_dir`` holds a run (without ``resume``) or none (with it), or the
            resumed run's checkpoint refuses ``config``, naming each changed key.
    """
    if resume and not (run_dir / ALIGNMENT).exists():
        raise ConfigError(f"{str(run_dir)!r} holds no deployed run to resume")
    if resume and config is not None:
        from vfl.run.runner import resumable  # imports torch: only where a resume is checked

        return resumable(config, run_dir, source)[0]
    if not resume:
        setup_only = () if (run_dir / CHECKPOINT).exists() else SET_UP_FILES
        check_new(run_dir, allow=(LOGS, *setup_only), resume=resume_command, new_run=NEW_RUN)
    return RunDirectory(run_dir)
