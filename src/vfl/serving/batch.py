"""Batch prediction in one process: new rows (or the run's own test split) in, a CSV out.

``predict(RUN_DIR, data=NEW.csv)`` gives every party its own raw columns of ``NEW.csv``,
transformed with its own fitted encoding, and writes one row per ID: the predicted class and the
probability of every class. If the table holds the run's label column, the metrics are computed
on those rows and match what training reported on the same rows. A category a party never saw
in training is scored by the training rule (all zeros one-hot), as ``vfl serve`` scores it, and
reported: an ``unseen_categories`` column of the CSV names the columns per row, and
``unseen_note`` says how many rows per column; with ``strict`` such rows refuse the batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from vfl.data.table import read_table
from vfl.errors import DataError
from vfl.results.files import check_output
from vfl.run.data import prepare
from vfl.run.predict import UNSEEN_COLUMN, Model, Predictions, label_indices

SHOWN_IDS = 3
"""IDs a refusal of unseen categories names per column."""


@dataclass(frozen=True)
class BatchInput:
    """Every party's block of the rows to predict, their IDs and, if known, their labels."""

    blocks: list[torch.Tensor]
    ids: np.ndarray
    labels: torch.Tensor | None
    unseen: dict[str, np.ndarray] = field(default_factory=dict)


def predict(
    run_dir: Path,
    *,
    data: Path | None = None,
    id_column: str = "",
    strict: bool = False,
) -> Predictions:
    """Predictions of the model ``run_dir`` exported, for ``data``'s rows or the run's test split.

    ``strict`` refuses ``data`` when a row holds a category unseen in training.

    Raises:
        DataError: naming the file, column or label that does not fit the model, or (with
            ``strict``) the columns holding unseen categories, with counts and IDs.
    """
    model = Model.load(run_dir)
    batch = test_split(model) if data is None else table_rows(model, data, id_column)
    if strict and batch.unseen:
        raise DataError(
            f"--strict: {data} holds categories unseen in training in"
            f" {_rows_with(batch.unseen)} rows ({_per_column(batch.unseen, batch.ids)}); nothing"
            " was written. Without --strict they are scored as all zeros one-hot (the training"
            f" rule) and named in the {UNSEEN_COLUMN!r} column"
        )
    predictions = model.predict(batch.blocks, ids=batch.ids, labels=batch.labels)
    return replace(predictions, unseen=batch.unseen)


def unseen_note(predictions: Predictions, out: Path) -> str | None:
    """One line on the rows holding categories unseen in training, or ``None`` if none do."""
    if not predictions.unseen:
        return None
    return (
        f"{_rows_with(predictions.unseen)} of {len(predictions.ids)} rows hold a category"
        f" unseen in training, scored as all zeros one-hot (the training rule):"
        f" {_per_column(predictions.unseen)}; column {UNSEEN_COLUMN!r} of {out} names them"
        " (--strict refuses such rows)"
    )


def _rows_with(unseen: dict[str, np.ndarray]) -> int:
    return int(np.logical_or.reduce(list(unseen.values())).sum())


def _per_column(unseen: dict[str, np.ndarray], ids: np.ndarray | None = None) -> str:
    parts = []
    for column, rows in unseen.items():
        part = f"{column!r} {int(rows.sum())}"
        if ids is not None:
            shown = ", ".join(str(i) for i in ids[rows][:SHOWN_IDS])
            part += f" (IDs {shown}{', ...' if rows.sum() > SHOWN_IDS else ''})"
        parts.append(part)
    return ", ".join(parts)


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
    blocks = model.features(frame, where=str(path))
    return BatchInput(blocks, ids, labels, model.unseen(frame))


def write_predictions(
    predictions: Predictions, out: Path, *, force: bool = False, data: Path | None = None
) -> Path:
    """Write ``predictions`` as CSV; never over the input ``data``, nor a file without ``force``.

    Raises:
        ConfigError: if ``out`` is ``data``, or exists and ``force`` is false.
    """
    check_output(out, force=force, inputs=() if data is None else (data,))
    out.parent.mkdir(parents=True, exist_ok=True)
    predictions.to_frame().to_csv(out, index=False)
    return out


def _labels(
    frame: pd.DataFrame, label: str, classes: tuple[str, ...], path: Path
) -> torch.Tensor | None:
    if not label or label not in frame:
        return None
    return label_indices(frame[label].tolist(), classes, f"{path}: label column {label!r}")
