"""Batch prediction in one process: new rows (or the run's own test split) in, a CSV out.

``predict(RUN_DIR, data=NEW.csv)`` (or ``data=`` a pandas DataFrame of the same columns) gives
every party its own raw columns of the rows, transformed with its own fitted encoding;
``write_predictions`` writes one row per ID: the predicted class and the probability of every
class. If the table holds the run's label column, the metrics are computed
on those rows and match what training reported on the same rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from vfl.data.table import read_table
from vfl.errors import ConfigError
from vfl.run.data import prepare
from vfl.run.predict import Model, Predictions, Rows


def predict(
    run_dir: Path | str,
    *,
    data: pd.DataFrame | Path | str | None = None,
    id_column: str = "",
) -> Predictions:
    """Predictions of the model ``run_dir`` exported, for new rows or the run's test split.

    Args:
        run_dir: The trained run's directory (``bundle/`` inside).
        data: New rows with every party's raw columns: a pandas DataFrame, or a CSV or Parquet
            file (as ``vfl predict --data``); default: the run's own test split.
        id_column: The ID column of ``data`` (default: the run's ``data.id_column``, if present).

    Raises:
        DataError: naming the file, column or label that does not fit the model.
    """
    model = Model.load(Path(run_dir))
    if data is None:
        rows = test_split(model)
    elif isinstance(data, pd.DataFrame):
        rows = model.rows(data, id_column=id_column, where="the DataFrame")
    else:
        rows = table_rows(model, Path(data), id_column)
    return model.predict(rows.blocks, ids=rows.ids, labels=rows.labels)


def test_split(model: Model) -> Rows:
    """The test split of the data the run trained on, as the run's own loader makes it."""
    dataset, _, data = prepare(model.config)
    return Rows(list(data.test_blocks), np.asarray(dataset.test.ids), data.test_labels)


def table_rows(model: Model, path: Path, id_column: str) -> Rows:
    """The rows of a CSV or Parquet table holding every party's raw columns (``Model.rows``)."""
    frame = read_table(Path(path), bad_numbers=model.config.data.bad_numbers)
    return model.rows(frame, id_column=id_column, where=str(path))


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
