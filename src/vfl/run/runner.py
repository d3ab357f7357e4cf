"""``vfl run``: check, load, compose, then write the run directory, train and summarize.

Everything that can refuse a run (a run directory in the way, the config's rules when it is
built, a resumed config that differs from its checkpoint's, the data, the composition) happens
before the run directory is created or written, so a refused run leaves no files. A run that
fails afterwards says so in its folder (``error.txt``, and ``traceback.txt`` for a bug).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch

from vfl.config import RunConfig
from vfl.config.io import to_toml
from vfl.config.mechanisms import MECHANISMS
from vfl.config.protocols import PROTOCOLS, chosen_protocol
from vfl.config.rules import check_target_metric
from vfl.data.dataset import Dataset
from vfl.data.partition import Partition
from vfl.errors import ConfigError
from vfl.registry import resolve
from vfl.results.files import (
    CHECKPOINT,
    CONFIG,
    PARTITION,
    RunDirectory,
    check_new,
    failure_line,
)
from vfl.results.summary import Target
from vfl.results.tensorboard import FOLDER as TENSORBOARD
from vfl.results.tensorboard import TensorBoardSink
from vfl.run.budget import Checkpointed, check_planned, check_resumable
from vfl.run.bundles import BUNDLE, export_run
from vfl.run.compose import Blueprint, build_session
from vfl.run.data import prepare
from vfl.run.finish import finish_summary as finish_summary  # imported from here by deploy/
from vfl.run.finish import noise_note
from vfl.run.fit import EpochLimit, RunStopped, fit
from vfl.run.folders import default_run_dir as default_run_dir  # its home before run/folders.py
from vfl.run.privacy_stages import noise_source
from vfl.run.probe import Probe
from vfl.run.progress import Progress, Terminal
from vfl.run.resume import keep_a_finished_summary
from vfl.run.resume import resumable as resumable  # imported from here by deploy/
from vfl.run.session import LocalParties, PartyGroup, Session
from vfl.run.signals import StopRequest
from vfl.run.stages import use_threads
from vfl.seeding import derive_seed

log = logging.getLogger(__name__)


def target_of(config: RunConfig) -> Target | None:
    """The configured target, if any."""
    return Target(config.target.metric, config.target.value) if config.target.metric else None


def train(
    config: RunConfig,
    run_dir: Path,
    *,
    resume: bool = False,
    stop: StopRequest | None = None,
    probe: Probe | None = None,
    on_start: Callable[[], None] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Train as configured into ``run_dir`` (or continue it with ``resume``); returns the summary.

    ``stop``, once requested, ends training after the current round with a checkpoint.
    ``probe`` (an attack, ``vfl.attacks``) observes the roles it taps and adds its metrics.
    ``on_start`` is called once every check has passed, before the first file is written.
    ``progress`` shows the work (default: ``fit_as_configured``'s).

    Raises:
        ConfigError: if ``run_dir`` is not missing or empty (without ``resume``), if the config
            differs from the checkpoint's outside ``folders.RESUMABLE_KEYS`` (with it), the
            data does not fit the config, a new run's epochs would spend more than
            ``privacy.max_epsilon``, or a resumed run has spent its budget already (all before
            anything is written or removed).
        RunStopped: if ``stop`` was requested.
    """
    trainer = tree_trainer(config)
    if trainer is not None:
        return trainer(
            config, run_dir, resume=resume, stop=stop, on_start=on_start, progress=progress
        )
    if resume:
        run_files, done = resumable(config, run_dir)
        composed = _compose(config, resume=done, probe=probe)
        if on_start is not None:
            on_start()
        with failures_recorded(run_files):
            keep_a_finished_summary(run_files, config)
            return _train(config, composed, run_files, resume, stop, progress)
    check_new(run_dir)
    composed = _compose(config, resume=None, probe=probe)
    if on_start is not None:
        on_start()
    run_files = RunDirectory(run_dir)
    with failures_recorded(run_files):
        return _train(config, composed, run_files, resume, stop, progress)


def tree_trainer(config: RunConfig) -> Callable[..., dict[str, Any]] | None:
    """The trainer a tree protocol's registration names (``runner = "trees"``), else ``None``."""
    name = chosen_protocol(config.protocol.name, config.privacy.mechanism)
    entry = PROTOCOLS.get(name)
    if entry is None or entry.runner != "trees":
        return None
    trainer = resolve(entry.loop)
    if not callable(trainer):
        raise ConfigError(f"protocol {name!r}: {entry.loop!r} is not a trainer function")
    return cast("Callable[..., dict[str, Any]]", trainer)


@dataclass(frozen=True)
class _Composed:
    """A built run and what its files and bundles need of its data."""

    dataset: Dataset
    partition: Partition
    session: Session[LocalParties]
    budget: EpochLimit | None = None


def _compose(
    config: RunConfig, *, resume: Checkpointed | None, probe: Probe | None = None
) -> _Composed:
    """Load the data, check what needs it, and build the run (nothing is written).

    ``resume``: where the checkpoint of a resumed run left it (``None`` for a new run).
    """
    use_threads(config.train.threads)
    dataset, partition, data = prepare(config)
    check_target_metric(config.target.metric, data.task.num_classes)
    if resume is None:  # user modules may draw from the global RNG (dropout): make runs repeatable
        torch.manual_seed(derive_seed(config.train.seed, "torch-global"))
    taps = probe.taps() if probe is not None else None
    session = build_session(Blueprint.from_config(config), data, taps=taps)
    if resume is not None:
        budget = check_resumable(config, session.trainer, resume)
    else:
        budget = check_planned(config, session.trainer)
    if probe is not None:
        probe.attach(session, data)
        session.probe = probe
    noised = MECHANISMS[config.privacy.mechanism].noises or config.privacy.gradient_noise.enabled
    if noised and noise_source(config, deployed=False) == "seeded":
        log.warning("privacy noise: %s", noise_note("seeded"))
    return _Composed(dataset, partition, session, budget)


def _train(
    config: RunConfig,
    composed: _Composed,
    run_files: RunDirectory,
    resume: bool,
    stop: StopRequest | None,
    progress: Progress | None,
) -> dict[str, Any]:
    dataset, partition, session = composed.dataset, composed.partition, composed.session
    run_files.write_text(CONFIG, to_toml(config))
    run_files.write_text(PARTITION, partition.to_json())
    try:
        fit_as_configured(
            session,
            config,
            run_files,
            resume=resume,
            stop=stop,
            budget=composed.budget,
            progress=progress,
        )
    finally:
        session.trainer.close()
    summary = finish_summary(config, session, run_files)
    if config.output.bundle and config.protocol.mode == "vfl":
        export_run(
            run_files.file(BUNDLE),
            session,
            config,
            partition=partition,
            encoder=dataset.encoder,
            classes=dataset.classes,
        )
    return summary


@contextmanager
def failures_recorded(run_files: RunDirectory) -> Iterator[None]:
    """Replace what an earlier attempt recorded; record why this one ends early, if it does."""
    run_files.clear_failure()
    try:
        yield
    except BaseException as error:
        run_files.record_failure(error, failure_message(error, run_files.path))
        raise


def failure_message(error: BaseException, run_dir: Path, command: str = "vfl run") -> str:
    """What ``error.txt`` says about a run that ended with ``error``, and how to go on.

    ``command`` continues it with ``--resume`` (``vfl run``; ``vfl attack`` works alike).
    """
    resume = f"`{command} --resume {run_dir}`"
    if isinstance(error, RunStopped):
        return f"{error}; continue with {resume}" if error.checkpointed else str(error)
    if isinstance(error, KeyboardInterrupt):
        if (run_dir / CHECKPOINT).exists():
            return f"interrupted; continue from the last checkpoint with {resume}"
        return "interrupted before the first checkpoint; nothing to resume"
    return failure_line(error)


def fit_as_configured(
    session: Session[PartyGroup],
    config: RunConfig,
    run: RunDirectory,
    *,
    resume: bool,
    eval_at_start: bool | None = None,
    stop: StopRequest | None = None,
    budget: EpochLimit | None = None,
    progress: Progress | None = None,
) -> None:
    """``fit`` with the config's epochs, evaluations, target, checkpoints and progress.

    ``eval_at_start`` overrides ``train.eval_at_start`` (a resumed deployment that already
    recorded epoch 0 must not record it again). Every checkpoint keeps the resolved config.
    With ``output.tensorboard``, every record also goes to TensorBoard event files.
    ``progress`` defaults to a line per epoch on standard error, and a bar of its rounds on a
    terminal if ``output.progress``.
    """
    if progress is None:
        progress = Terminal(bar=config.output.progress)
    if config.output.tensorboard:
        run.sinks.append(TensorBoardSink(run.file(TENSORBOARD)))
    try:
        _fit_configured(session, config, run, resume, eval_at_start, stop, budget, progress)
    finally:
        run.close_sinks()


def _fit_configured(
    session: Session[PartyGroup],
    config: RunConfig,
    run: RunDirectory,
    resume: bool,
    eval_at_start: bool | None,
    stop: StopRequest | None,
    budget: EpochLimit | None,
    progress: Progress,
) -> None:
    fit(
        session,
        epochs=config.train.epochs,
        run=run,
        progress=progress,
        checkpoint=config.train.checkpoint,
        checkpoint_every=config.train.checkpoint_every,
        config=to_toml(config),
        stop=stop,
        resume=resume,
        eval_at_start=config.train.eval_at_start if eval_at_start is None else eval_at_start,
        eval_every=config.train.eval_every,
        target=target_of(config),
        stop_at_target=config.target.stop,
        budget=budget,
    )
