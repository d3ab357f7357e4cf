"""A data set defined and registered here, outside the package: one ``register_dataset`` line.

``toy_blobs`` is two Gaussian blobs in four dimensions, read from one ``blobs.npz`` file (the
test writes it): ``data.name = "toy_blobs"`` with ``data.path`` at its folder then loads it in
``vfl run``, and ``vfl data list`` lists it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from vfl.data import DatasetEntry, register_dataset
from vfl.data.dataset import Dataset, Split
from vfl.data.fetch import FetchContext
from vfl.data.registry import unregister_dataset
from vfl.errors import DataError

NAME = "toy_blobs"
FILE = "blobs.npz"


def write_blobs(folder: Path, rows: int = 240, seed: int = 0) -> Path:
    """Write the data set's one file into ``folder``: half the rows around -1, half around +1."""
    rng = np.random.default_rng(seed)
    labels = np.arange(rows) % 2
    features = rng.normal(0.0, 0.7, (rows, 4)) + (2 * labels[:, None] - 1)
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / FILE, features=features.astype(np.float32), labels=labels)
    return folder


def load_blobs(folder: Path) -> Dataset:
    """The blobs, the first three quarters for training."""
    with np.load(folder / FILE) as saved:
        features, labels = saved["features"], saved["labels"].astype(np.int64)
    cut = 3 * len(labels) // 4
    ids = np.arange(len(labels))
    return Dataset(
        NAME,
        Split(ids[:cut], features[:cut], labels[:cut]),
        Split(ids[cut:], features[cut:], labels[cut:]),
        classes=("low", "high"),
        columns=("a", "b", "c", "d"),
    )


def fetch_blobs(staging: Path, context: FetchContext) -> None:
    """Nowhere to fetch it from: it is written by hand (``write_blobs``)."""
    raise DataError("toy_blobs is made by write_blobs, not downloaded")


ENTRY = DatasetEntry(
    name=NAME,
    description="two Gaussian blobs in 4 dimensions (a test's own data set)",
    license="CC0",
    source="written by tests/extensions/toy_dataset.py",
    loader=load_blobs,
    fetcher=fetch_blobs,
    files=((FILE,),),
    by_hand=f"{FILE}, as write_blobs writes it",
)
"""The data set's whole registration."""


@contextmanager
def toy_dataset_registered() -> Iterator[DatasetEntry]:
    """The toy data set in the registry for the block, and out of it afterwards."""
    register_dataset(ENTRY)
    try:
        yield ENTRY
    finally:
        unregister_dataset(NAME)
