"""Run an experiment from a config: load data, partition, build models, train, write results."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vfl.config import RunConfig
from vfl.config.io import to_toml
from vfl.data.dataset import Dataset, Split
from vfl.data.partition import Partition, make_partition
from vfl.data.registry import load_dataset
from vfl.data.table import load_table
from vfl.errors import ConfigError
from vfl.models.optim import optimizer_factory
from vfl.prune.lightweight import RoundCompute, summarize_compute, write_compute_csv
from vfl.results.files import COMPUTE, CONFIG, METRICS, PARTITION, SUMMARY, RunDirectory
from vfl.results.summary import Target
from vfl.roles.party import Party
from vfl.run.assemble import (
    bottom_model,
    head_model,
    party_from_config,
    server_from_config,
    trainer_from_config,
)
from vfl.run.costs import paper_accounting, time_to_reach
from vfl.run.fit import fit
from vfl.run.simulation import Simulation, VerticalData, embedding_width, simulate, vertical_data
from vfl.seeding import derive_seed
from vfl.transport.base import PartyEndpoint, Transport
from vfl.transport.colocated import ColocatedTransport
from vfl.transport.inproc import InProcTransport
from vfl.wire import SPLIT_TRAIN

__all__ = [  # the builders are re-exported for deployment code written against this module
    "bottom_model",
    "build_simulation",
    "head_model",
    "load_data",
    "party_from_config",
    "prepare",
    "run",
    "server_from_config",
    "subsample",
    "trainer_from_config",
]

SUBSAMPLE_SEED = 0
"""Subsamples (data.max_*_samples) do not depend on train.seed, so seeds vary only training."""


def load_data(config: RunConfig) -> Dataset:
    """The data set a config names, subsampled as configured."""
    data = config.data
    if data.name == "table":
        dataset = load_table(
            Path(data.path),
            label=data.label,
            id_column=data.id_column or None,
            test_path=Path(data.test_path) if data.test_path else None,
            test_fraction=data.test_fraction,
            seed=SUBSAMPLE_SEED,
        )
    else:
        options = {"test_fraction": data.test_fraction} if data.name == "default-credit" else {}
        root = Path(data.path) if data.path else None
        dataset = load_dataset(data.name, root=root, **options)
    dataset = subsample(dataset, data.max_train_samples, data.max_test_samples)
    return binarize(dataset, data.positive_classes) if data.positive_classes else dataset


def binarize(dataset: Dataset, positive: Sequence[int]) -> Dataset:
    """The data set with labels 1 for the ``positive`` classes and 0 for the rest."""
    invalid = sorted(set(positive) - set(range(dataset.num_classes)))
    if invalid:
        raise ConfigError(
            f"data.positive_classes: {invalid} are not classes of"
            f" {dataset.name!r}; valid: 0..{dataset.num_classes - 1}"
        )
    chosen = np.asarray(sorted(set(positive)))

    def relabel(split: Split) -> Split:
        labels = np.isin(split.labels, chosen).astype(np.int64)
        return Split(split.ids, split.features, labels)

    names = ", ".join(dataset.classes[i] for i in chosen)
    return replace(
        dataset,
        train=relabel(dataset.train),
        test=relabel(dataset.test),
        classes=(f"not ({names})", f"({names})"),
    )


def subsample(dataset: Dataset, max_train: int, max_test: int) -> Dataset:
    """A seeded subsample of at most ``max_train`` / ``max_test`` rows (0 keeps all)."""
    rng = np.random.default_rng(SUBSAMPLE_SEED)

    def take(split: Split, limit: int) -> Split:
        if limit == 0 or limit >= len(split):
            return split
        rows = np.sort(rng.choice(len(split), size=limit, replace=False))
        return Split(split.ids[rows], split.features[rows], split.labels[rows])

    return replace(dataset, train=take(dataset.train, max_train), test=take(dataset.test, max_test))


def build_simulation(config: RunConfig, data: VerticalData) -> Simulation:
    """The configured protocol in one process, models seeded from ``train.seed``."""
    if config.protocol.mode == "centralized":
        bottoms = [
            bottom_model(config, party, tuple(block.shape[1:]))
            for party, block in enumerate(data.train_blocks, start=1)
        ]
        sizes = [embedding_width(b, x) for b, x in zip(bottoms, data.train_blocks, strict=True)]
        return simulate(
            data,
            bottoms=bottoms,
            head=head_model(config, sizes, data.task),
            optimizer=optimizer_factory(config.train.optimizer),
            batch_size=config.train.batch_size,
            eval_batch_size=config.train.eval_batch_size,
            shuffle=config.train.shuffle,
            drop_last=config.train.drop_last,
            seed=derive_seed(config.train.seed, "batches"),
            centralized=True,
        )
    parties = [
        party_from_config(
            config,
            party,
            train,
            test,
            train_labels=data.train_labels,
            task=data.task,
            num_parties=data.num_parties,
        )
        for party, (train, test) in enumerate(
            zip(data.train_blocks, data.test_blocks, strict=True), start=1
        )
    ]
    widths = {p.party_id: embedding_width(p.model, p.features[SPLIT_TRAIN]) for p in parties}
    server = server_from_config(
        config,
        task=data.task,
        train_labels=data.train_labels,
        test_labels=data.test_labels,
        embedding_dims=widths,
    )
    return Simulation(trainer_from_config(config, server, transport_for(config, parties)), parties)


def transport_for(config: RunConfig, parties: Sequence[Party]) -> Transport:
    """The in-process transport, with the active party (if any) in the server's process."""
    active = config.protocol.active_party
    if active > len(parties):
        raise ConfigError(
            f"protocol.active_party: {active} is not a party; valid: 1..{len(parties)} (0: none)"
        )
    remote = {
        p.party_id: PartyEndpoint(p.party_id, p.handle) for p in parties if p.party_id != active
    }
    transport = InProcTransport(remote)
    if active == 0:
        return transport
    return ColocatedTransport(transport, {active: parties[active - 1].handle})


def prepare(config: RunConfig) -> tuple[Dataset, Partition, VerticalData]:
    """Load and partition the data a config names."""
    dataset = load_data(config)
    part = config.partition
    partition = make_partition(
        dataset, part.scheme, part.num_parties, groups=part.groups, seed=part.seed
    )
    return dataset, partition, vertical_data(dataset, partition)


def default_run_dir(config: RunConfig, label: str) -> Path:
    """``output.dir / output.name``, or ``output.dir / <label>-<timestamp>``."""
    name = config.output.name or f"{label}-{time.strftime('%Y%m%d-%H%M%S')}"
    return Path(config.output.dir) / name


def target_of(config: RunConfig) -> Target | None:
    """The configured target, if any."""
    return Target(config.target.metric, config.target.value) if config.target.metric else None


def compute_summary(simulation: Simulation, logs: dict[int, list[RoundCompute]]) -> dict[str, Any]:
    """Per-party compute totals with each party's uploaded training bytes from the ledger."""
    summary = summarize_compute(logs)
    ledger = simulation.trainer.ledger
    if ledger is not None:
        for party, totals in summary["parties"].items():
            totals["bytes_up"] = ledger.total(phase="train", direction="up", party=int(party))
    return summary


def run(config: RunConfig, run_dir: Path, *, resume: bool = False) -> dict[str, Any]:
    """Train as configured into ``run_dir`` (or continue it with ``resume``); returns the summary.

    Raises:
        ConfigError: if ``run_dir`` already holds a run and ``resume`` is false.
    """
    if not resume and (run_dir / METRICS).exists():
        raise ConfigError(
            f"run directory {str(run_dir)!r} already holds a run; continue it with"
            f" `vfl run --resume {run_dir}` or choose another --run-dir"
        )
    _, partition, data = prepare(config)
    if not resume:  # user modules may draw from the global RNG (dropout): make runs repeatable
        torch.manual_seed(derive_seed(config.train.seed, "torch-global"))
    run_files = RunDirectory(run_dir)
    run_files.write_text(CONFIG, to_toml(config))
    run_files.write_text(PARTITION, partition.to_json())
    simulation = build_simulation(config, data)
    try:
        fit_as_configured(simulation, config, run_files, resume=resume)
    finally:
        simulation.trainer.close()
    return finish_summary(config, simulation, run_files)


def fit_as_configured(
    simulation: Simulation,
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
        simulation,
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


def finish_summary(config: RunConfig, simulation: Simulation, run: RunDirectory) -> dict[str, Any]:
    """Add to ``summary.json`` the compute records, the paper's cost formulas, time to target."""
    summary = run.read_json(SUMMARY)
    logs = simulation.compute_logs()
    if logs:
        write_compute_csv(run.file(COMPUTE), logs)
        summary["compute"] = compute_summary(simulation, logs)
    if "bytes" in summary:
        summary["accounting"] = paper_accounting(
            config, simulation, summary["rounds"], summary["bytes"]["train_total"]
        )
    if "target" in summary:
        summary["target"]["time"] = time_to_reach(config, summary, run.read_metrics())
    run.write_json(SUMMARY, summary)
    return summary
