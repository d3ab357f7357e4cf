"""Batch prediction in one process: new rows (or the run's own test split) in, a CSV out.

``predict(RUN_DIR, data=NEW.csv)`` gives every party its own raw columns of ``NEW.csv``,
transformed with its own fitted encoding, and writes one row per ID: the predicted class and the
probability of every class. If the table holds the run's label column, the metrics are computed
on those rows and match what training reported on the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from vfl.data.table import read_table
from vfl.errors import ConfigError, DataError
from vfl.run.data import prepare
from vfl.run.predict import Model, Predictions, label_indices


@dataclass(frozen=True)
class BatchInput:
    """Every party's block of the rows to predict, their IDs and, if known, their labels."""

    blocks: list[torch.Tensor]
    ids: np.ndarray
    labels: torch.Tensor | None


def predict(
    run_dir: Path,
    *,
    data: Path | None = None,
    id_column: str = "",
) -> Predictions:
    """Predictions of the model ``run_dir`` exported, for ``data``'s rows or the run's test split.

    Raises:
        DataError: naming the file, column or label that does not fit the model.
    """
    model = Model.load(run_dir)
    batch = test_split(model) if data is None else table_rows(model, data, id_column)
    return model.predict(batch.blocks, ids=batch.ids, labels=batch.labels)


def test_split(model: Model) -> BatchInput:
    """The test split of the data the run trained on, as the run's own loader makes it."""
    dataset, _, data = prepare(model.config)
    return BatchInput(list(data.test_blocks), np.asarray(dataset.test.ids), data.test_labels)


def table_rows(model: Model, path: Path, id_column: str) -> BatchInput:
    """The rows of a CSV or Parquet table holding every party's raw columns.

    IDs come from ``id_column`` (by default the run's ``data.id_column`` when the table has it,
    else row numbers); labels from the run's label column, when the table has it.
    """
    config = model.config
    frame = read_table(Path(path), bad_numbers=config.data.bad_numbers)
    column = id_column or (config.data.id_column if config.data.id_column in frame else "")
    if column and column not in frame:
        raise DataError(f"{path} has no ID column {column!r}; its columns: {list(frame.columns)}")
    ids = frame[column].to_numpy() if column else np.arange(len(frame))
    labels = _labels(frame, config.data.label, model.classes, path)
    return BatchInput(model.features(frame, where=str(path)), ids, labels)


def write_predictions(predictions: Predictions, out: Path, *, force: bool = False) -> Path:
    """Write ``predictions`` as CSV; never replace a file without ``force``.

    Raises:
        ConfigError: if ``out`` exists and ``force`` is false.
    """
    if out.exists() and not force:
        raise ConfigError(f"{out} already exists; choose another --out or pass --force")
    out.parent.mkdir(parents=True, exist_ok=True)
    predictions.to_frame().to_csv(out, index=False)
    return out


def _labels(
    frame: pd.DataFrame, label: str, classes: tuple[str, ...], path: Path
) -> torch.Tensor | None:
    if not label or label not in frame:
        return None
    return label_indices(frame[label].tolist(), classes, f"{path}: label column {label!r}")
