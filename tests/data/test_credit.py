from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vfl.data.credit import CREDIT_FILE, load_default_credit
from vfl.errors import DataError

from .fakes import CREDIT_FEATURES, credit_frame


def test_credit_csv_loads_with_ids_from_the_id_column(tmp_path: Path) -> None:
    # Prepare
    frame = credit_frame(40)
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
    credit_frame().to_csv(path, index=False)

    # Execute
    dataset = load_default_credit(path)

    # Assert
    columns = dataset.columns or ()
    assert columns[:3] == ("LIMIT_BAL", "SEX=1", "SEX=2")
    assert "EDUCATION=3" in columns and "MARRIAGE=-2" in columns
    assert "AGE" in columns and "PAY_AMT6" in columns and "ID" not in columns
    assert set(dataset.column_sources or ()) == set(CREDIT_FEATURES)


def test_the_original_sheet_label_spelling_is_accepted(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "credit.csv"
    frame = credit_frame().rename(
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
    credit_frame().drop(columns=["PAY_3", "AGE"]).to_csv(path, index=False)

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
    frame = credit_frame()
    frame.loc[3, "ID"] = 1
    frame.to_csv(path, index=False)

    # Execute / Assert
    with pytest.raises(DataError, match="repeated id"):
        load_default_credit(path)


def test_a_word_in_a_credit_amount_names_its_line_and_can_be_read_as_missing(
    tmp_path: Path,
) -> None:
    # Prepare: a word in an amount column, and one in the categorical codes of EDUCATION
    frame = credit_frame().astype({"BILL_AMT1": object, "EDUCATION": object})
    frame.loc[6, "BILL_AMT1"] = "1.000,50"
    frame.loc[2, "EDUCATION"] = "other"
    path = tmp_path / CREDIT_FILE
    frame.to_csv(path, index=False)

    # Execute
    with pytest.raises(DataError) as caught:
        load_default_credit(path)
    dataset = load_default_credit(path, bad_numbers="missing")

    # Assert
    assert str(caught.value).startswith(
        f"{path}: column 'BILL_AMT1' holds numbers except in 1 of its 40 filled cells; line 8"
        " (row 6) holds '1.000,50'."
    )
    columns = dataset.columns or ()
    assert "BILL_AMT1=missing" in columns and "EDUCATION=other" in columns


def test_a_credit_table_too_small_for_a_test_split_names_the_sizes(tmp_path: Path) -> None:
    # Prepare: one client of each class
    path = tmp_path / CREDIT_FILE
    credit_frame(5).iloc[[0, 1]].to_csv(path, index=False)

    # Execute / Assert
    with pytest.raises(DataError, match=r"the test split has no rows; .*label 0 1 rows -> 0"):
        load_default_credit(path)
