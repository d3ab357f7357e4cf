"""Data sets: in-memory splits, loaders for the supported formats, and a registry with a cache.

Use ``load_dataset("mnist")`` for a registered data set (after ``fetch_dataset("mnist")`` or
``vfl data fetch mnist``), or a loader such as ``load_table(path, label=...)`` for your own files.
"""

from vfl.data import catalog as catalog  # imported for its effect: the built-in data sets
from vfl.data.adult import load_adult
from vfl.data.credit import load_default_credit
from vfl.data.dataset import Dataset, Split
from vfl.data.fetch import data_dir
from vfl.data.idx import read_idx, write_idx
from vfl.data.images import load_cifar10, load_fashion_mnist, load_mnist
from vfl.data.registry import (
    DatasetEntry,
    DatasetInfo,
    fetch_dataset,
    list_datasets,
    load_dataset,
    raw_label,
    register_dataset,
)
from vfl.data.table import load_table
from vfl.data.tabular import EncodedTable, encode_table

__all__ = [
    "Dataset",
    "DatasetEntry",
    "DatasetInfo",
    "EncodedTable",
    "Split",
    "data_dir",
    "encode_table",
    "fetch_dataset",
    "list_datasets",
    "load_adult",
    "load_cifar10",
    "load_dataset",
    "load_default_credit",
    "load_fashion_mnist",
    "load_mnist",
    "load_table",
    "raw_label",
    "read_idx",
    "register_dataset",
    "write_idx",
]
