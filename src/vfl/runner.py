"""Run an experiment from a config: load data, partition, build models, train, write results."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from vfl.config import RunConfig
from vfl.configio import to_toml
from vfl.data.dataset import Dataset, Split
from vfl.data.partition import Partition, make_partition
from vfl.data.registry import load_dataset
from vfl.data.table import load_table
from vfl.errors import ConfigError
from vfl.fit import fit
from vfl.metrics import Task
from vfl.models.build import build_bottom, build_head
from vfl.optim import optimizer_factory
from vfl.party import Party
from vfl.protocol.sampler import BatchSampler
from vfl.protocol.split import SplitLearning
from vfl.results import CONFIG, METRICS, PARTITION, SUMMARY, RunDirectory
from vfl.seeding import derive_seed, torch_seed
from vfl.server import Server
from vfl.simulation import Simulation, VerticalData, embedding_width, simulate, vertical_data
from vfl.summary import Target
from vfl.transport.base import PartyEndpoint, Transport
from vfl.transport.inproc import InProcTransport
from vfl.wire import SPLIT_TRAIN

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
    return subsample(dataset, data.max_train_samples, data.max_test_samples)


def subsample(dataset: Dataset, max_train: int, max_test: int) -> Dataset:
    """A seeded subsample of at most ``max_train`` / ``max_test`` rows (0 keeps all)."""
    rng = np.random.default_rng(SUBSAMPLE_SEED)

    def take(split: Split, limit: int) -> Split:
        if limit == 0 or limit >= len(split):
            return split
        rows = np.sort(rng.choice(len(split), size=limit, replace=False))
        return Split(split.ids[rows], split.features[rows], split.labels[rows])

    return replace(dataset, train=take(dataset.train, max_train), test=take(dataset.test, max_test))


def bottom_model(config: RunConfig, party: int, block_shape: tuple[int, ...]) -> nn.Module:
    """Party ``party``'s bottom model, initialised from ``train.seed`` (same in any process)."""
    with torch_seed(derive_seed(config.train.seed, "bottom", party)):
        return build_bottom(config.model.bottom, block_shape)


def head_model(config: RunConfig, widths: Sequence[int], task: Task) -> nn.Module:
    """The server's head for embeddings of ``widths``, initialised from ``train.seed``."""
    with torch_seed(derive_seed(config.train.seed, "head")):
        return build_head(config.model.head, widths, task)


def party_from_config(
    config: RunConfig, party: int, train_block: torch.Tensor, test_block: torch.Tensor
) -> Party:
    """Party ``party`` as the config describes it: the same object in simulation and deployment."""
    model = bottom_model(config, party, tuple(train_block.shape[1:]))
    return Party(
        party,
        train_features=train_block,
        test_features=test_block,
        model=model,
        optimizer=optimizer_factory(config.train.optimizer)(model.parameters()),
    )


def server_from_config(
    config: RunConfig,
    *,
    task: Task,
    train_labels: torch.Tensor,
    test_labels: torch.Tensor,
    embedding_dims: Mapping[int, int],
) -> Server:
    """The server as the config describes it, for parties sending ``embedding_dims``."""
    head = head_model(config, list(embedding_dims.values()), task)
    return Server(
        head=head,
        task=task,
        train_labels=train_labels,
        test_labels=test_labels,
        optimizer=optimizer_factory(config.train.optimizer)(head.parameters()),
        embedding_dims=embedding_dims,
    )


def sampler_from_config(config: RunConfig, num_train: int) -> BatchSampler:
    """The server's batch order."""
    train = config.train
    seed = derive_seed(train.seed, "batches")
    return BatchSampler(num_train, train.batch_size, shuffle=train.shuffle, seed=seed)


def trainer_from_config(config: RunConfig, server: Server, transport: Transport) -> SplitLearning:
    """The server-side protocol loop over ``transport`` (in-process or network)."""
    sampler = sampler_from_config(config, len(server.labels[SPLIT_TRAIN]))
    return SplitLearning(server, transport, sampler, eval_batch_size=config.train.eval_batch_size)


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
            seed=derive_seed(config.train.seed, "batches"),
            centralized=True,
        )
    parties = [
        party_from_config(config, party, train, test)
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
    transport = InProcTransport({p.party_id: PartyEndpoint(p.party_id, p.handle) for p in parties})
    return Simulation(trainer_from_config(config, server, transport), parties)


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
    run_files = RunDirectory(run_dir)
    run_files.write_text(CONFIG, to_toml(config))
    run_files.write_text(PARTITION, partition.to_json())
    simulation = build_simulation(config, data)
    try:
        fit(
            simulation,
            epochs=config.train.epochs,
            run=run_files,
            progress=config.output.progress,
            checkpoint=config.train.checkpoint,
            resume=resume,
            eval_at_start=config.train.eval_at_start,
            target=Target(config.target.metric, config.target.value)
            if config.target.metric
            else None,
        )
    finally:
        simulation.trainer.close()
    return run_files.read_json(SUMMARY)
