from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vfl.data.credit import CREDIT_FILE, load_default_credit
from vfl.errors import DataError

FEATURES = [
    "LIMIT_BAL", "SEX", "EDUCATION", "MARRIAGE", "AGE",
    "PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6",
    "BILL_AMT1", "BILL_AMT2", "BILL_AMT3", "BILL_AMT4", "BILL_AMT5", "BILL_AMT6",
    "PAY_AMT1", "PAY_AMT2", "PAY_AMT3", "PAY_AMT4", "PAY_AMT5", "PAY_AMT6",
]  # fmt: skip


def _credit_frame(num_rows: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"ID": np.arange(1, num_rows + 1)})
    for column in FEATURES:
        frame[column] = rng.integers(-2, 9, num_rows) * (1000 if "AMT" in column else 1)
    frame["SEX"] = rng.integers(1, 3, num_rows)
    frame["default.payment.next.month"] = (np.arange(num_rows) % 5 == 0).astype(int)
    return frame


def test_credit_csv_loads_with_ids_from_the_id_column(tmp_path: Path) -> None:
    # Prepare
    frame = _credit_frame(40)
    frame.to_csv(tmp_path / CREDIT_FILE, index=False)

    # Execute
    dataset = load_default_credit(tmp_path, test_fraction=0.25, seed=2)

    # Assert
    assert dataset.name == "default-credit"
    assert dataset.classes == ("no default", "default")
    assert len(dataset.train) == 30 and len(dataset.test) == 10
    assert int(dataset.test.labels.sum()) == 2  # a quarter of the 8 defaults
    assert set(dataset.train.ids) | set(dataset.test.ids) == set(range(1, 41))
    by_id = frame.set_index("ID")["default.payment.next.month"]
    np.testing.assert_array_equal(
        dataset.test.labels, by_id.loc[dataset.test.ids.tolist()].to_numpy()
    )


def test_sex_education_and_marriage_are_one_hot_the_rest_numeric(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "credit.csv"
    _credit_frame().to_csv(path, index=False)

    # Execute
    dataset = load_default_credit(path)

    # Assert
    columns = dataset.columns or ()
    assert columns[:3] == ("LIMIT_BAL", "SEX=1", "SEX=2")
    assert "EDUCATION=3" in columns and "MARRIAGE=-2" in columns
    assert "AGE" in columns and "PAY_AMT6" in columns and "ID" not in columns
    assert set(dataset.column_sources or ()) == set(FEATURES)


def test_the_original_sheet_label_spelling_is_accepted(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "credit.csv"
    frame = _credit_frame().rename(
        columns={"default.payment.next.month": "default payment next month"}
    )
    frame.to_csv(path, index=False)

    # Execute
    dataset = load_default_credit(path)

    # Assert
    assert len(dataset.train) + len(dataset.test) == 40


def test_missing_columns_are_listed(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "credit.csv"
    _credit_frame().drop(columns=["PAY_3", "AGE"]).to_csv(path, index=False)

    # Execute / Assert
    with pytest.raises(DataError, match=r"lacks the expected columns \['AGE', 'PAY_3'\]"):
        load_default_credit(path)


def test_missing_credit_file_names_the_path(tmp_path: Path) -> None:
    # Execute / Assert
    with pytest.raises(DataError, match=CREDIT_FILE):
        load_default_credit(tmp_path)


def test_duplicate_credit_ids_are_a_data_error(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "credit.csv"
    frame = _credit_frame()
    frame.loc[3, "ID"] = 1
    frame.to_csv(path, index=False)

    # Execute / Assert
    with pytest.raises(DataError, match="repeated id"):
        load_default_credit(path)
