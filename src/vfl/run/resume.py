"""Resuming a run folder: whether a config may go on from its checkpoint, and what to keep.

Shared by ``vfl run --resume`` (``vfl.run.runner``) and the deployed server's ``--resume``.
"""

from __future__ import annotations

from pathlib import Path

from vfl.config import RunConfig
from vfl.errors import ConfigError
from vfl.results.files import SUMMARY, RunDirectory, RunFileError, keep_copy
from vfl.run.budget import Checkpointed
from vfl.run.folders import check_unchanged


def keep_a_finished_summary(run_files: RunDirectory, config: RunConfig) -> None:
    """Before a finished run trains more epochs, keep its summary (``summary.json.resumed-*``).

    ``vfl sweep`` keeps it as ``summary.epochs<E>.json`` before it resumes, so finds none here.
    """
    path = run_files.file(SUMMARY)
    if not path.exists():
        return
    try:
        epochs = int(run_files.read_json(SUMMARY).get("epochs", 0))
    except (RunFileError, TypeError, ValueError):
        epochs = 0  # unreadable: keep it whatever it says
    if epochs < config.train.epochs:
        keep_copy(path, "resumed")


def resumable(
    config: RunConfig, run_dir: Path, source: str = ""
) -> tuple[RunDirectory, Checkpointed]:
    """The run folder to resume and where its checkpoint left it, once ``config`` may go on.

    Used by ``vfl run --resume`` and the deployed server's ``--resume`` alike; ``source``
    names where ``config`` was read (default: the run's ``config.toml``).

    Raises:
        ConfigError: naming every key that differs from the checkpoint's config outside
            ``folders.RESUMABLE_KEYS``, or epochs fewer than the checkpoint has done.
    """
    if not run_dir.is_dir():
        raise ConfigError(f"--resume {str(run_dir)!r}: no such folder, so no run to resume")
    run_files = RunDirectory(run_dir)
    state = run_files.load_checkpoint(lazily=True)
    trained = state.get("config")
    if isinstance(trained, str) and trained:  # checkpoints of older versions hold no config
        check_unchanged(trained, config, run_dir, source)
    done, position = int(state["epoch"]), int(state.get("position", 0))
    if config.train.epochs < done + (position > 0):
        where = f"round {position} of epoch {done + 1}" if position else f"the end of epoch {done}"
        raise ConfigError(
            f"train.epochs: the checkpoint of {str(run_dir)!r} is at {where}, so the run cannot"
            f" end after {config.train.epochs} epochs; resume with --set"
            f" train.epochs={max(done + (position > 0), 1)} or more"
        )
    return run_files, Checkpointed(done, position)
