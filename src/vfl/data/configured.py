"""The data set a ``[data]`` table names: each source reads its own keys, and only those.

A key the chosen source does not read is refused unless it is at its default, so that
``data.label`` on ``adult`` or ``data.test_fraction`` next to ``data.test_path`` cannot be
silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vfl.data.dataset import Dataset
from vfl.data.registry import dataset_names, load_dataset, settings_read
from vfl.data.table import load_table
from vfl.errors import ConfigError, DataError

TABLE = "table"
"""The source name of a user's own CSV or Parquet file (not a registered, fetched data set)."""
TABLE_SETTINGS = ("path", "label", "id_column", "test_path", "test_fraction", "bad_numbers")
EVERY_SOURCE = (
    "name",
    "max_train_samples",
    "max_test_samples",
    "subsample_seed",
    "positive_classes",
)
"""The ``[data]`` keys the runner applies to every data set; each source reads its own others."""
TABLE_SPLIT_SEED = 0
"""A table's random test split does not depend on ``train.seed``: seeds vary training only."""


def load_configured(
    name: str, settings: Mapping[str, Any], *, defaults: Mapping[str, Any]
) -> Dataset:
    """Load ``name`` with the settings of a ``[data]`` table.

    A registered data set reads ``path`` (its folder or one of its files instead of the cache;
    empty for the cache) and the settings its entry declares (``test_fraction`` and
    ``bad_numbers`` for ``default-credit``); ``table`` reads ``path``, ``label``, ``id_column``,
    ``test_path``, ``test_fraction`` (unless ``test_path`` is given) and ``bad_numbers``.

    Args:
        name: ``data.name``.
        settings: Every ``[data]`` key and its value.
        defaults: Every ``[data]`` key's default; a key the source does not read must have it.

    Raises:
        ConfigError: for a key the source does not read, naming it and the data set.
        DataError: for an unknown name, missing files or a malformed table.
    """
    if name == TABLE:
        split = "test_fraction" if settings["test_path"] else ""
        _refuse_unread(name, settings, defaults, [k for k in TABLE_SETTINGS if k != split])
        return load_table(
            Path(settings["path"]),
            label=settings["label"],
            id_column=settings["id_column"] or None,
            test_path=Path(settings["test_path"]) if settings["test_path"] else None,
            test_fraction=settings["test_fraction"],
            seed=TABLE_SPLIT_SEED,
            bad_numbers=settings["bad_numbers"],
        )
    if name not in dataset_names():
        valid = ", ".join([*dataset_names(), TABLE])
        raise DataError(f"unknown data set {name!r}; valid names: {valid} (your own file)")
    read = settings_read(name)
    _refuse_unread(name, settings, defaults, read)
    options = {key: settings[key] for key in read if key != "path"}
    return load_dataset(name, root=settings.get("path") or None, **options)


def _refuse_unread(
    name: str, settings: Mapping[str, Any], defaults: Mapping[str, Any], read: Sequence[str]
) -> None:
    for key, value in settings.items():
        if key in EVERY_SOURCE or key in read or value == defaults[key]:
            continue
        table_split = name == TABLE and key == "test_fraction"
        when = " when data.test_path gives the test split" if table_split else ""
        raise ConfigError(
            f"data.{key} = {value!r} is not read by data set {name!r}{when}; it reads"
            f" {', '.join(f'data.{k}' for k in read)}: remove data.{key}"
        )
