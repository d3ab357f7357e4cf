"""The data a config names: loaded through the data registry, subsampled, relabelled, split."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from vfl.config import DataConfig, RunConfig
from vfl.data.configured import load_configured
from vfl.data.dataset import Dataset, Split
from vfl.data.partition import Partition, make_partition
from vfl.data.vertical import VerticalData, vertical_data
from vfl.errors import ConfigError


def load_data(config: RunConfig) -> Dataset:
    """The data set a config names, subsampled and relabelled as configured."""
    data = config.data
    defaults = dataclasses.asdict(DataConfig())
    dataset = load_configured(data.name, dataclasses.asdict(data), defaults=defaults)
    dataset = subsample(
        dataset, data.max_train_samples, data.max_test_samples, seed=data.subsample_seed
    )
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
    return dataclasses.replace(
        dataset,
        train=relabel(dataset.train),
        test=relabel(dataset.test),
        classes=(f"not ({names})", f"({names})"),
    )


def subsample(dataset: Dataset, max_train: int, max_test: int, *, seed: int = 0) -> Dataset:
    """A subsample of at most ``max_train`` / ``max_test`` rows (0 keeps all), drawn with ``seed``.

    The seed is ``data.subsample_seed``, not ``train.seed``: seeds vary training only.
    """
    rng = np.random.default_rng(seed)

    def take(split: Split, limit: int) -> Split:
        if limit == 0 or limit >= len(split):
            return split
        rows = np.sort(rng.choice(len(split), size=limit, replace=False))
        return Split(split.ids[rows], split.features[rows], split.labels[rows])

    return dataclasses.replace(
        dataset, train=take(dataset.train, max_train), test=take(dataset.test, max_test)
    )


def prepare(config: RunConfig) -> tuple[Dataset, Partition, VerticalData]:
    """Load and partition the data a config names."""
    dataset = load_data(config)
    part = config.partition
    partition = make_partition(
        dataset, part.scheme, part.num_parties, groups=part.groups, seed=part.seed, grid=part.grid
    )
    return dataset, partition, vertical_data(dataset, partition)
