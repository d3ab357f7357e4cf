from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.data.tabular import MIN_STD, encode_table
from vfl.errors import DataError


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    train = pd.DataFrame(
        {
            "age": [20.0, 30.0, 40.0, 50.0],
            "color": ["red", "blue", None, "red"],
            "flag": [True, False, True, True],
            "y": ["no", "yes", "no", "yes"],
        }
    )
    test = pd.DataFrame(
        {
            "age": [30.0, 60.0],
            "color": ["green", "blue"],
            "flag": [False, True],
            "y": ["yes", "no"],
        }
    )
    return train, test


def test_columns_are_one_hot_or_standardized_and_named_by_source() -> None:
    # Prepare
    train, test = _frames()

    # Execute
    encoded = encode_table(train, test, label="y")

    # Assert
    assert encoded.columns == (
        "age",
        "color=blue",
        "color=red",
        "color=missing",
        "flag=False",
        "flag=True",
    )
    assert encoded.column_sources == ("age", "color", "color", "color", "flag", "flag")
    assert encoded.classes == ("no", "yes")
    np.testing.assert_array_equal(encoded.train_labels, [0, 1, 0, 1])
    np.testing.assert_array_equal(encoded.test_labels, [1, 0])
    assert encoded.train_features.dtype == np.float32
    np.testing.assert_array_equal(
        encoded.train_features[:, 1:4], [[0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0]]
    )


def test_unseen_test_category_encodes_as_all_zeros() -> None:
    # Prepare
    train, test = _frames()

    # Execute
    encoded = encode_table(train, test, label="y")

    # Assert: "green" is not a train category; "blue" is
    np.testing.assert_array_equal(encoded.test_features[0, 1:4], [0, 0, 0])
    np.testing.assert_array_equal(encoded.test_features[1, 1:4], [1, 0, 0])


def test_test_statistics_do_not_leak_into_the_standardization() -> None:
    # Prepare
    train, test = _frames()

    # Execute
    encoded = encode_table(train, test, label="y")

    # Assert: train mean 35, population std sqrt(125)
    std = np.sqrt(125.0)
    np.testing.assert_allclose(encoded.train_features[:, 0], (train["age"] - 35) / std, rtol=1e-6)
    np.testing.assert_allclose(encoded.test_features[:, 0], [-5 / std, 25 / std], rtol=1e-6)


def test_missing_numeric_value_is_imputed_with_the_train_mean_and_flagged() -> None:
    # Prepare
    train = pd.DataFrame({"x": [1.0, np.nan, 3.0, 4.0], "y": [0, 1, 0, 1]})
    test = pd.DataFrame({"x": [2.0, 5.0], "y": [1, 0]})

    # Execute
    encoded = encode_table(train, test, label="y")

    # Assert
    assert encoded.columns == ("x", "x=missing")
    assert encoded.column_sources == ("x", "x")
    mean, std = 8 / 3, float(np.std([1.0, 3.0, 4.0]))
    np.testing.assert_allclose(encoded.train_features[1], [0.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(encoded.train_features[0], [(1 - mean) / std, 0.0], rtol=1e-5)
    np.testing.assert_array_equal(encoded.test_features[:, 1], [0.0, 0.0])
    assert np.isfinite(encoded.train_features).all()


def test_missing_indicator_is_added_when_only_the_test_split_has_missing_values() -> None:
    # Prepare
    train = pd.DataFrame({"x": [1.0, 2.0, 3.0], "z": [1.0, 1.0, 1.0], "y": [0, 1, 0]})
    test = pd.DataFrame({"x": [np.nan, 2.0], "z": [1.0, 5.0], "y": [1, 0]})

    # Execute
    encoded = encode_table(train, test, label="y")

    # Assert: z has std 0, so it is only centred
    assert encoded.columns == ("x", "x=missing", "z")
    np.testing.assert_allclose(encoded.test_features[0], [0.0, 1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(encoded.test_features[1, 2], 4.0)


def test_explicit_categorical_columns_override_dtype_inference() -> None:
    # Prepare
    train = pd.DataFrame({"sex": [1, 2, 2], "code": ["1", "2", "3"], "y": [0, 1, 1]})
    test = pd.DataFrame({"sex": [2, 1], "code": ["4", "5"], "y": [1, 0]})

    # Execute
    encoded = encode_table(train, test, label="y", categorical=["sex"])

    # Assert: "code" holds digit strings and is read as numeric
    assert encoded.columns == ("sex=1", "sex=2", "code")
    np.testing.assert_allclose(
        encoded.test_features[:, 2], (np.array([4, 5]) - 2) / np.std([1, 2, 3])
    )


def test_non_numeric_value_in_a_numeric_column_is_a_data_error() -> None:
    # Prepare
    train = pd.DataFrame({"x": ["1", "2", "oops"], "y": [0, 1, 1]})

    # Execute / Assert
    with pytest.raises(DataError, match="numeric column 'x' of the train table"):
        encode_table(train, train, label="y", categorical=[])


def test_infinite_value_is_a_data_error_naming_the_row() -> None:
    # Prepare
    train = pd.DataFrame({"x": [1.0, np.inf, 3.0], "y": [0, 1, 1]})

    # Execute / Assert
    with pytest.raises(DataError, match="infinite at row 1"):
        encode_table(train, train, label="y")


def test_missing_label_is_a_data_error_naming_the_row() -> None:
    # Prepare
    train = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": ["a", None, "b"]})

    # Execute / Assert
    with pytest.raises(DataError, match="train row 1 has no value in label column 'y'"):
        encode_table(train, train, label="y")


def test_test_label_not_seen_in_train_is_a_data_error() -> None:
    # Prepare
    train = pd.DataFrame({"x": [1.0, 2.0], "y": ["a", "b"]})
    test = pd.DataFrame({"x": [1.0, 2.0], "y": ["b", "c"]})

    # Execute / Assert
    with pytest.raises(DataError, match="test row 1 has label 'c'"):
        encode_table(train, test, label="y")


def test_positive_label_becomes_the_last_class() -> None:
    # Prepare
    train = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": ["yes", "no", "yes"]})

    # Execute
    encoded = encode_table(train, train, label="y", positive_label="no")

    # Assert
    assert encoded.classes == ("yes", "no")
    np.testing.assert_array_equal(encoded.train_labels, [0, 1, 0])


def test_explicit_classes_fix_the_order_and_must_cover_train_labels() -> None:
    # Prepare
    train = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [2, 0, 1]})

    # Execute
    encoded = encode_table(train, train, label="y", classes=[2, 1, 0])

    # Assert
    np.testing.assert_array_equal(encoded.train_labels, [0, 2, 1])
    with pytest.raises(DataError, match="not among the classes"):
        encode_table(train, train, label="y", classes=[0, 1])


@pytest.mark.parametrize(
    ("train_columns", "test_columns", "kwargs", "message"),
    [
        (["x", "y"], ["x"], {}, "test table has no label column 'y'"),
        (["x", "y"], ["x", "z", "y"], {}, r"only in test: \['z'\]"),
        (["x", "y"], ["x", "y"], {"categorical": ["w"]}, r"categorical columns \['w'\]"),
        (["x", "y"], ["x", "y"], {"categorical": ["y"]}, "label column 'y' cannot"),
    ],
)
def test_column_mismatches_are_data_errors(
    train_columns: list[str], test_columns: list[str], kwargs: dict[str, object], message: str
) -> None:
    # Prepare
    train = pd.DataFrame({column: [1, 0] for column in train_columns})
    test = pd.DataFrame({column: [1, 0] for column in test_columns})

    # Execute / Assert
    with pytest.raises(DataError, match=message):
        encode_table(train, test, label="y", **kwargs)  # type: ignore[arg-type]


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@settings(max_examples=50, deadline=None)
@given(
    train_values=st.lists(finite, min_size=2, max_size=30),
    test_values=st.lists(finite, min_size=1, max_size=30),
    other_test_values=st.lists(finite, min_size=1, max_size=30),
)
def test_standardization_uses_train_statistics_only(
    train_values: list[float], test_values: list[float], other_test_values: list[float]
) -> None:
    # Prepare
    train = pd.DataFrame({"x": train_values, "y": [0] * len(train_values)})
    test = pd.DataFrame({"x": test_values, "y": [0] * len(test_values)})
    other_test = pd.DataFrame({"x": other_test_values, "y": [0] * len(other_test_values)})

    # Execute
    encoded = encode_table(train, test, label="y")
    encoded_other = encode_table(train, other_test, label="y")

    # Assert: train encoding ignores the test split; test uses the train mean and std
    np.testing.assert_array_equal(encoded.train_features, encoded_other.train_features)
    mean, std = np.mean(train_values), np.std(train_values)
    scale = std if std > MIN_STD else 1.0
    expected = (np.array(test_values) - mean) / scale
    np.testing.assert_allclose(encoded.test_features[:, 0], expected, rtol=1e-5, atol=1e-4)
    if std > 1e-3:
        assert abs(float(encoded.train_features[:, 0].mean())) < 1e-3
        assert abs(float(encoded.train_features[:, 0].std()) - 1.0) < 1e-3


def test_round_off_sized_deviation_counts_as_zero() -> None:
    # Prepare: a std of 5e-62 would blow test values up past the float32 range
    train = pd.DataFrame({"x": [0.0, 1e-61], "y": [0, 1]})
    test = pd.DataFrame({"x": [1.0], "y": [0]})

    # Execute
    encoded = encode_table(train, test, label="y")

    # Assert
    np.testing.assert_allclose(encoded.test_features[:, 0], [1.0])
