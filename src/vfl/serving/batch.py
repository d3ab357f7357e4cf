"""Batch prediction in one process: new rows (or the run's own test split) in, a CSV out.

``predict(RUN_DIR, data=NEW.csv)`` (or ``data=`` a pandas DataFrame of the same columns) gives
every party its own raw columns of the rows, transformed with its own fitted encoding;
``write_predictions`` writes one row per ID: the predicted class and the probability of every
class. If the table holds the run's label column, the metrics are computed on those rows and
match what training reported on the same rows. A category a party never saw in training is
scored by the training rule (all zeros one-hot), as ``vfl serve`` scores it, and reported: an
``unseen_categories`` column of the CSV names the columns per row, and ``unseen_note`` says how
many rows per column; with ``strict`` such rows refuse the batch.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from vfl.data.table import read_table
from vfl.errors import DataError
from vfl.results.files import check_output
from vfl.run.data import prepare
from vfl.run.predict import UNSEEN_COLUMN, Predictions, Rows, TableRows, load_model

SHOWN_IDS = 3
"""IDs a refusal of unseen categories names per column."""


def predict(
    run_dir: Path | str,
    *,
    data: pd.DataFrame | Path | str | None = None,
    id_column: str = "",
    strict: bool = False,
) -> Predictions:
    """Predictions of the model ``run_dir`` exported, for new rows or the run's test split.

    Args:
        run_dir: The trained run's directory (``bundle/`` inside).
        data: New rows with every party's raw columns: a pandas DataFrame, or a CSV or Parquet
            file (as ``vfl predict --data``); default: the run's own test split.
        id_column: The ID column of ``data`` (default: the run's ``data.id_column``, if present).
        strict: Refuse ``data`` when a row holds a category unseen in training.

    Raises:
        DataError: naming the file, column or label that does not fit the model, or (with
            ``strict``) the columns holding unseen categories, with counts and IDs.
    """
    model = load_model(Path(run_dir))
    if data is None:
        rows = test_split(model)
    elif isinstance(data, pd.DataFrame):
        rows = model.rows(data, id_column=id_column, where="the DataFrame")
    else:
        rows = table_rows(model, Path(data), id_column)
    if strict and rows.unseen:
        where = "the DataFrame" if isinstance(data, pd.DataFrame) else str(data)
        raise DataError(
            f"--strict: {where} holds categories unseen in training in"
            f" {_rows_with(rows.unseen)} rows ({_per_column(rows.unseen, rows.ids)}); nothing"
            " was written. Without --strict they are scored as all zeros one-hot (the training"
            f" rule) and named in the {UNSEEN_COLUMN!r} column"
        )
    predictions = model.predict(rows.blocks, ids=rows.ids, labels=rows.labels)
    return replace(predictions, unseen=rows.unseen)


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


def test_split(model: TableRows) -> Rows:
    """The test split of the data the run trained on, as the run's own loader makes it."""
    dataset, _, data = prepare(model.config)
    return Rows(list(data.test_blocks), np.asarray(dataset.test.ids), data.test_labels)


def table_rows(model: TableRows, path: Path, id_column: str) -> Rows:
    """The rows of a CSV or Parquet table holding every party's raw columns (``Model.rows``)."""
    frame = read_table(Path(path), bad_numbers=model.config.data.bad_numbers)
    return model.rows(frame, id_column=id_column, where=str(path))


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
