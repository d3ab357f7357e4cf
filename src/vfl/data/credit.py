"""Loader for the UCI Default-of-Credit-Card-Clients table (30,000 clients, 23 features).

The expected CSV layout (as the UCI ``.xls`` exported to CSV, and as widely redistributed) has one
header row: ``ID``, the 23 feature columns ``LIMIT_BAL``, ``SEX``, ``EDUCATION``, ``MARRIAGE``,
``AGE``, ``PAY_0``, ``PAY_2`` to ``PAY_6``, ``BILL_AMT1`` to ``BILL_AMT6``, ``PAY_AMT1`` to
``PAY_AMT6``, and the label ``default.payment.next.month`` (``default payment next month``, the
spelling of the original sheet, is accepted too).
"""

from __future__ import annotations

from pathlib import Path

from vfl.data.dataset import Dataset
from vfl.data.numbers import BadNumbers
from vfl.data.table import read_table, require_rows, sample_ids, split_shares, stratified_split
from vfl.data.tabular import encode_table
from vfl.errors import DataError

CREDIT_FILE = "default_of_credit_card_clients.csv"
CREDIT_ID = "ID"
CREDIT_LABEL = "default.payment.next.month"
CREDIT_LABEL_ALIASES = ("default payment next month", "default_payment_next_month")
CREDIT_CATEGORICAL = ("SEX", "EDUCATION", "MARRIAGE")
CREDIT_FEATURES = (
    "LIMIT_BAL",
    *CREDIT_CATEGORICAL,
    "AGE",
    "PAY_0",
    *(f"PAY_{i}" for i in range(2, 7)),
    *(f"BILL_AMT{i}" for i in range(1, 7)),
    *(f"PAY_AMT{i}" for i in range(1, 7)),
)
CREDIT_CLASSES = ("no default", "default")


def load_default_credit(
    path_or_root: Path | str,
    *,
    test_fraction: float = 0.2,
    seed: int = 0,
    bad_numbers: BadNumbers = "error",
) -> Dataset:
    """Load Default-of-Credit-Card-Clients from its CSV.

    The source defines no train/test split, so the rows are split at random, stratified by the
    label: ``round(test_fraction * n)`` rows of each class go to the test split, chosen with
    ``numpy.random.default_rng(seed)`` (see ``vfl.data.table.stratified_split``). ``SEX``,
    ``EDUCATION`` and ``MARRIAGE`` are one-hot encoded and the other 20 features standardized with
    train statistics. Ids are the ``ID`` column; class 1 (``"default"``) is label value 1.

    Args:
        path_or_root: The CSV file, or a folder holding ``default_of_credit_card_clients.csv``.
        test_fraction: The share of each class put in the test split.
        seed: Seed of the split.
        bad_numbers: What a cell that is not a number in a column of numbers is: ``"error"``
            or ``"missing"`` (see ``vfl.data.numbers``).

    Returns:
        The data set.

    Raises:
        DataError: If the file is missing, lacks expected columns, holds bad values, or has too
            few rows for a test split.
    """
    path = Path(path_or_root)
    if path.is_dir():
        path = path / CREDIT_FILE
    if not path.is_file():
        raise DataError(f"Default-of-Credit-Card CSV {path} does not exist")
    frame = read_table(path, bad_numbers=bad_numbers, skip=(CREDIT_ID, *CREDIT_CATEGORICAL))
    frame = frame.rename(columns=dict.fromkeys(CREDIT_LABEL_ALIASES, CREDIT_LABEL))
    missing = [c for c in (CREDIT_ID, *CREDIT_FEATURES, CREDIT_LABEL) if c not in frame.columns]
    if missing:
        raise DataError(
            f"{path} lacks the expected columns {missing}; the UCI CSV layout has {CREDIT_ID},"
            f" {', '.join(CREDIT_FEATURES)}, {CREDIT_LABEL}"
        )
    require_rows(path, frame, "the table")
    ids = sample_ids(frame, CREDIT_ID, path)
    frame = frame[[*CREDIT_FEATURES, CREDIT_LABEL]]
    train_rows, test_rows = stratified_split(
        frame[CREDIT_LABEL].to_numpy(), test_fraction=test_fraction, seed=seed
    )
    require_rows(
        path,
        frame.iloc[test_rows],
        "the test split",
        split_shares(frame[CREDIT_LABEL], test_fraction),
    )
    encoded = encode_table(
        frame.iloc[train_rows],
        frame.iloc[test_rows],
        label=CREDIT_LABEL,
        categorical=CREDIT_CATEGORICAL,
        classes=(0, 1),
    )
    return encoded.to_dataset(
        "default-credit",
        train_ids=ids[train_rows],
        test_ids=ids[test_rows],
        classes=CREDIT_CLASSES,
    )
