"""Loader for UCI Adult (census income): ``adult.data`` (train) and ``adult.test`` (test).

Both files have no header and 15 comma-separated fields per line (values follow ``", "``); ``?``
marks a missing value. ``adult.test`` opens with a junk line ``|1x3 Cross validator`` and its labels
end with a dot (``>50K.``). Blank lines are skipped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from vfl.data.dataset import Dataset
from vfl.data.tabular import encode_table
from vfl.errors import DataError

ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)
ADULT_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
ADULT_LABEL = "income"
ADULT_CLASSES = ("<=50K", ">50K")
ADULT_FILES = ("adult.data", "adult.test")


def load_adult(root: Path | str) -> Dataset:
    """Load UCI Adult from ``root/adult.data`` and ``root/adult.test``.

    The 6 numeric columns are standardized and the 8 categorical ones one-hot encoded (see
    ``encode_table``), with missing values (``?``) handled as described there. The label is
    ``income``; class 0 is ``<=50K`` and class 1 is ``>50K``. Ids are ``int64`` row positions among
    the data lines of each file, counted from 0.

    Args:
        root: Folder holding ``adult.data`` and ``adult.test``.

    Returns:
        The data set.
    """
    root = Path(root)
    train = read_adult_file(root / "adult.data")
    test = read_adult_file(root / "adult.test")
    categorical = [c for c in ADULT_COLUMNS if c not in ADULT_NUMERIC and c != ADULT_LABEL]
    encoded = encode_table(
        train, test, label=ADULT_LABEL, categorical=categorical, classes=ADULT_CLASSES
    )
    return encoded.to_dataset(
        "adult",
        train_ids=np.arange(len(train), dtype=np.int64),
        test_ids=np.arange(len(test), dtype=np.int64),
    )


def read_adult_file(path: Path) -> pd.DataFrame:
    """Read one Adult file into a frame with the 15 named columns, ``NaN`` where ``?`` stood.

    Numeric columns are float64; the others are strings. Trailing dots of labels are removed.

    Raises:
        DataError: If the file is missing, a line has the wrong number of fields, or a numeric field
            is not a number.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read Adult file {path}: {error}") from error
    rows: list[list[str | None]] = []
    numbers = []
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.startswith("|"):
            continue
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != len(ADULT_COLUMNS):
            raise DataError(
                f"{path} line {number} has {len(fields)} fields; Adult lines have"
                f" {len(ADULT_COLUMNS)}: {', '.join(ADULT_COLUMNS)}"
            )
        rows.append([None if field == "?" else field for field in fields])
        numbers.append(number)
    frame = pd.DataFrame(rows, columns=list(ADULT_COLUMNS), dtype=object)
    for column in ADULT_NUMERIC:
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = np.flatnonzero((frame[column].notna() & values.isna()).to_numpy(dtype=bool))
        if bad.size:
            raise DataError(
                f"{path} line {numbers[bad[0]]}: column {column!r} holds"
                f" {frame[column].iloc[bad[0]]!r}, which is not a number; Adult's numeric"
                f" columns are {', '.join(ADULT_NUMERIC)} ('?' marks a missing value)"
            )
        frame[column] = values.astype(np.float64)
    frame[ADULT_LABEL] = frame[ADULT_LABEL].str.rstrip(".")
    return frame
