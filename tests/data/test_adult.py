from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vfl.data.adult import load_adult, read_adult_file
from vfl.errors import DataError

from .fakes import ADULT_TRAIN_ROWS, adult_text, write_adult


def test_adult_loads_both_files_with_greater_than_50k_as_class_one(tmp_path: Path) -> None:
    # Prepare
    write_adult(tmp_path)

    # Execute
    dataset = load_adult(tmp_path)

    # Assert
    assert dataset.name == "adult"
    assert dataset.classes == ("<=50K", ">50K")
    np.testing.assert_array_equal(dataset.train.labels, [0, 0, 0, 1, 1])
    np.testing.assert_array_equal(dataset.test.labels, [0, 0, 1])
    np.testing.assert_array_equal(dataset.test.ids, [0, 1, 2])
    assert dataset.train.ids.dtype == np.int64
    assert dataset.train.features.dtype == np.float32


def test_adult_columns_encode_numeric_and_categorical_features(tmp_path: Path) -> None:
    # Prepare
    write_adult(tmp_path)

    # Execute
    dataset = load_adult(tmp_path)

    # Assert
    columns = dataset.columns or ()
    sources = dataset.column_sources or ()
    assert columns[0] == "age" and "fnlwgt" in columns
    assert "workclass=missing" in columns and "occupation=missing" in columns
    assert "native-country=Cuba" in columns and "native-country=Atlantis" not in columns
    assert set(sources) == {
        "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
        "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
        "hours-per-week", "native-country",
    }  # fmt: skip
    assert "income" not in sources


def test_unseen_test_country_and_missing_test_country_encode_as_all_zeros(tmp_path: Path) -> None:
    # Prepare: test row 1 has "?" as its country and train has no missing country;
    # test row 2 has "Atlantis", unseen in train
    write_adult(tmp_path)

    # Execute
    dataset = load_adult(tmp_path)

    # Assert
    country = [
        i for i, source in enumerate(dataset.column_sources or ()) if source == "native-country"
    ]
    np.testing.assert_array_equal(dataset.test.features[1:, country], 0.0)
    assert dataset.test.features[0, country].sum() == 1.0


def test_read_adult_file_skips_the_junk_line_and_strips_label_dots(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "adult.test"
    path.write_text(
        adult_text([*ADULT_TRAIN_ROWS[:2], "39|?|1|a|1|b|?|c|d|e|0|0|1|?|>50K."], junk_line=True)
    )

    # Execute
    frame = read_adult_file(path)

    # Assert
    assert len(frame) == 3
    assert list(frame["income"]) == ["<=50K", "<=50K", ">50K"]
    assert frame["workclass"].isna().tolist() == [False, False, True]
    assert frame["age"].dtype == np.float64


def test_line_with_the_wrong_number_of_fields_is_a_data_error(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "adult.data"
    path.write_text(adult_text([ADULT_TRAIN_ROWS[0], "39|State-gov|77516"], junk_line=False))

    # Execute / Assert
    with pytest.raises(DataError, match="line 2 has 3 fields"):
        read_adult_file(path)


def test_non_numeric_age_is_a_data_error_naming_the_line_and_value(tmp_path: Path) -> None:
    # Prepare: the second data line, after the junk line
    rows = [ADULT_TRAIN_ROWS[1], ADULT_TRAIN_ROWS[0].replace("39", "old", 1)]
    path = tmp_path / "adult.data"
    path.write_text(adult_text(rows, junk_line=True))

    # Execute
    with pytest.raises(DataError) as caught:
        read_adult_file(path)

    # Assert
    assert str(caught.value) == (
        f"{path} line 3: column 'age' holds 'old', which is not a number; Adult's numeric"
        " columns are age, fnlwgt, education-num, capital-gain, capital-loss, hours-per-week"
        " ('?' marks a missing value)"
    )


def test_missing_adult_file_is_a_data_error(tmp_path: Path) -> None:
    # Prepare
    write_adult(tmp_path)
    (tmp_path / "adult.test").unlink()

    # Execute / Assert
    with pytest.raises(DataError, match=r"adult\.test"):
        load_adult(tmp_path)
