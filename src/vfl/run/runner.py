"""``vfl run``: check, load, compose, then write the run directory, train and summarize.

Everything that can refuse a run (the config's rules when it is built, the data, the
composition) happens before the run directory is created, so a refused run leaves no files.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import torch

from vfl.config import RunConfig
from vfl.config.io import to_toml
from vfl.errors import ConfigError
from vfl.protocol.loop import ServerLoop
from vfl.results.compute import summarize_compute, write_compute_csv
from vfl.results.costs import RoundShape, paper_accounting, time_to_reach
from vfl.results.files import COMPUTE, CONFIG, METRICS, PARTITION, SUMMARY, RunDirectory
from vfl.results.summary import Target
from vfl.run.bundles import BUNDLE, export_run
from vfl.run.compose import Blueprint, build_session
from vfl.run.data import prepare
from vfl.run.fit import fit
from vfl.run.session import PartyGroup, Session
from vfl.run.stages import NoiseSource, noise_source, use_threads
from vfl.seeding import derive_seed

log = logging.getLogger(__name__)


def default_run_dir(config: RunConfig, label: str) -> Path:
    """``output.dir / output.name``, or ``output.dir / <label>-<timestamp>``."""
    name = config.output.name or f"{label}-{time.strftime('%Y%m%d-%H%M%S')}"
    return Path(config.output.dir) / name


def target_of(config: RunConfig) -> Target | None:
    """The configured target, if any."""
    return Target(config.target.metric, config.target.value) if config.target.metric else None


def train(config: RunConfig, run_dir: Path, *, resume: bool = False) -> dict[str, Any]:
    """Train as configured into ``run_dir`` (or continue it with ``resume``); returns the summary.

    Raises:
        ConfigError: if ``run_dir`` already holds a run and ``resume`` is false, or the data
            does not fit the config (before anything is written).
    """
    if not resume and (run_dir / METRICS).exists():
        raise ConfigError(
            f"run directory {str(run_dir)!r} already holds a run; continue it with"
            f" `vfl run --resume {run_dir}` or choose another --run-dir"
        )
    use_threads(config.train.threads)
    dataset, partition, data = prepare(config)
    if not resume:  # user modules may draw from the global RNG (dropout): make runs repeatable
        torch.manual_seed(derive_seed(config.train.seed, "torch-global"))
    session = build_session(Blueprint.from_config(config), data)
    if config.privacy.mechanism == "pbm" and noise_source(config, deployed=False) == "seeded":
        log.warning("privacy noise: %s", noise_note("seeded"))
    run_files = RunDirectory(run_dir)
    run_files.write_text(CONFIG, to_toml(config))
    run_files.write_text(PARTITION, partition.to_json())
    try:
        fit_as_configured(session, config, run_files, resume=resume)
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


def fit_as_configured(
    session: Session[PartyGroup],
    config: RunConfig,
    run: RunDirectory,
    *,
    resume: bool,
    eval_at_start: bool | None = None,
) -> None:
    """``fit`` with the config's epochs, evaluations, target, checkpoints and progress bar.

    ``eval_at_start`` overrides ``train.eval_at_start`` (a resumed deployment that already
    recorded epoch 0 must not record it again).
    """
    fit(
        session,
        epochs=config.train.epochs,
        run=run,
        progress=config.output.progress,
        checkpoint=config.train.checkpoint,
        resume=resume,
        eval_at_start=config.train.eval_at_start if eval_at_start is None else eval_at_start,
        eval_every=config.train.eval_every,
        target=target_of(config),
        stop_at_target=config.target.stop,
    )


def finish_summary(
    config: RunConfig,
    session: Session[PartyGroup],
    run: RunDirectory,
    *,
    deployed: bool = False,
) -> dict[str, Any]:
    """Add to ``summary.json`` the compute records, the paper's cost formulas, time to target.

    ``deployed``: the run was a deployment (its noise came from the operating system).
    """
    summary = run.read_json(SUMMARY)
    if "privacy" in summary:
        summary["privacy"]["noise"] = noise_note(noise_source(config, deployed=deployed))
    logs = session.compute_logs()
    if logs:
        write_compute_csv(run.file(COMPUTE), logs)
        summary["compute"] = compute_summary(session, logs)
    trainer = session.trainer
    if "bytes" in summary and isinstance(trainer, ServerLoop):
        summary["accounting"] = paper_accounting(
            round_shape(config, trainer),
            rounds=summary["rounds"],
            measured_bytes=summary["bytes"]["train_total"],
        )
    if "target" in summary:
        summary["target"]["time"] = time_to_reach(
            summary,
            run.read_metrics(),
            local_steps=config.protocol.local_steps,
            compute_ms=config.target.compute_ms,
            latencies_ms=config.target.latencies_ms,
        )
    run.write_json(SUMMARY, summary)
    return summary


def noise_note(source: NoiseSource) -> str:
    """What the privacy section of a summary says about where the noise came from."""
    if source == "os":
        return "os: drawn from the operating system"
    return (
        "seeded: reproducible from train.seed, so anyone who knows the seed can regenerate it;"
        " epsilon holds only if the seed is secret (privacy.randomness = 'os' for private runs)"
    )


def round_shape(config: RunConfig, loop: ServerLoop) -> RoundShape:
    """What one round of ``loop`` sends, for the paper's cost formulas."""
    compress = config.compress
    return RoundShape(
        shared_labels=config.protocol.labels == "shared",
        batch=config.train.batch_size,
        widths=list(loop.server.embedding_dims.values()),
        server_parameters=sum(p.numel() for p in loop.server.head.parameters()),
        embedding=(compress.embedding.name, compress.embedding.bits),
        gradient=(compress.gradient.name, compress.gradient.bits),
        rounds_per_epoch=len(loop.sampler),
    )


def compute_summary(session: Session[PartyGroup], logs: dict[int, list[Any]]) -> dict[str, Any]:
    """Per-party compute totals with each party's uploaded training bytes from the ledger."""
    summary = summarize_compute(logs)
    ledger = session.trainer.ledger
    if ledger is not None:
        for party, totals in summary["parties"].items():
            totals["bytes_up"] = ledger.total(phase="train", direction="up", party=int(party))
    return summary
