from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.config import load_config
from vfl.data.table import load_table, stratified_split
from vfl.errors import DataError
from vfl.run import runner


def _frame(num_rows: int = 20) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "customer": [f"c{i:03d}" for i in range(num_rows)],
            "income": rng.normal(50.0, 10.0, num_rows),
            "city": rng.choice(["paris", "oslo", "rome"], num_rows),
            "churn": np.arange(num_rows) % 4 == 0,
        }
    )


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet", ".pq"])
def test_csv_and_parquet_tables_load_with_a_stratified_split(tmp_path: Path, suffix: str) -> None:
    # Prepare
    frame = _frame(20)
    path = tmp_path / f"customers{suffix}"
    if suffix.startswith(".csv"):
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)

    # Execute
    dataset = load_table(path, label="churn", id_column="customer", test_fraction=0.25, seed=1)

    # Assert
    assert dataset.name == "customers"
    assert dataset.classes == ("False", "True")
    assert len(dataset.train) == 15 and len(dataset.test) == 5
    assert int(dataset.test.labels.sum()) == 1  # one of the five positives
    assert set(dataset.train.ids) | set(dataset.test.ids) == set(frame["customer"])
    assert dataset.columns == ("income", "city=oslo", "city=paris", "city=rome")
    assert dataset.column_sources == ("income", "city", "city", "city")


def test_split_is_reproducible_from_the_seed(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "t.csv"
    _frame(40).to_csv(path, index=False)

    # Execute
    first = load_table(path, label="churn", seed=3)
    second = load_table(path, label="churn", seed=3)
    other = load_table(path, label="churn", seed=4)

    # Assert
    np.testing.assert_array_equal(first.test.ids, second.test.ids)
    assert not np.array_equal(first.test.ids, other.test.ids)


def test_ids_are_row_positions_without_an_id_column(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "t.csv"
    _frame(10).to_csv(path, index=False)

    # Execute
    dataset = load_table(path, label="churn", test_fraction=0.3)

    # Assert
    ids = np.sort(np.concatenate([dataset.train.ids, dataset.test.ids]))
    np.testing.assert_array_equal(ids, np.arange(10))
    assert dataset.train.ids.dtype == np.int64
    assert "customer=c000" in (dataset.columns or ())


def test_split_column_selects_the_test_rows(tmp_path: Path) -> None:
    # Prepare
    frame = _frame(6)
    frame["part"] = ["train", "Test", "train", "train ", "test", "TRAIN"]
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)

    # Execute
    dataset = load_table(path, label="churn", id_column="customer", split_column="part")

    # Assert
    np.testing.assert_array_equal(dataset.test.ids, ["c001", "c004"])
    assert "part" not in (dataset.column_sources or ())


def test_bad_split_marker_is_a_data_error(tmp_path: Path) -> None:
    # Prepare
    frame = _frame(3)
    frame["part"] = ["train", "valid", "test"]
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)

    # Execute / Assert
    with pytest.raises(DataError, match="row 1 holds 'valid'"):
        load_table(path, label="churn", split_column="part")


def test_test_path_gives_the_test_split(tmp_path: Path) -> None:
    # Prepare
    frame = _frame(12)
    frame.iloc[:8].to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[8:].to_parquet(tmp_path / "test.parquet", index=False)

    # Execute
    dataset = load_table(
        tmp_path / "train.csv", label="churn", test_path=tmp_path / "test.parquet", name="demo"
    )

    # Assert
    assert dataset.name == "demo"
    assert len(dataset.train) == 8 and len(dataset.test) == 4
    np.testing.assert_array_equal(dataset.test.ids, [0, 1, 2, 3])


def test_nan_in_a_numeric_feature_is_imputed(tmp_path: Path) -> None:
    # Prepare
    frame = _frame(10)
    frame.loc[[2, 7], "income"] = np.nan
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)

    # Execute
    dataset = load_table(path, label="churn", id_column="customer")

    # Assert
    assert "income=missing" in (dataset.columns or ())
    assert np.isfinite(dataset.train.features).all() and np.isfinite(dataset.test.features).all()


def test_unknown_extension_names_the_valid_ones(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "t.xlsx"
    path.write_bytes(b"")

    # Execute / Assert
    with pytest.raises(DataError, match=r"\.csv, \.csv\.gz, \.parquet, \.pq"):
        load_table(path, label="churn")


def test_missing_label_column_lists_the_available_columns(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "t.csv"
    _frame(5).to_csv(path, index=False)

    # Execute / Assert
    with pytest.raises(DataError, match=r"no label column 'label'.*\['customer', 'income'"):
        load_table(path, label="label")


def test_duplicate_ids_are_a_data_error(tmp_path: Path) -> None:
    # Prepare
    frame = _frame(6)
    frame.loc[4, "customer"] = "c001"
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)

    # Execute / Assert
    with pytest.raises(DataError, match=r"repeated id.*\['c001'\]"):
        load_table(path, label="churn", id_column="customer")


def test_unreadable_table_is_a_data_error(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "t.parquet"
    path.write_bytes(b"not parquet")

    # Execute / Assert
    with pytest.raises(DataError, match="cannot read table"):
        load_table(path, label="churn")


@settings(max_examples=50, deadline=None)
@given(
    labels=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=60),
    test_fraction=st.floats(min_value=0.05, max_value=0.95),
    seed=st.integers(0, 2**32 - 1),
)
def test_stratified_split_partitions_rows_and_keeps_each_class_in_train(
    labels: list[str], test_fraction: float, seed: int
) -> None:
    # Execute
    train_rows, test_rows = stratified_split(labels, test_fraction=test_fraction, seed=seed)

    # Assert
    assert sorted([*train_rows, *test_rows]) == list(range(len(labels)))
    values = np.array(labels)
    assert set(values[train_rows]) == set(labels)
    for value in set(labels):
        count = labels.count(value)
        assert (values[test_rows] == value).sum() == min(round(test_fraction * count), count - 1)


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 2.0])
def test_stratified_split_rejects_fractions_outside_zero_one(fraction: float) -> None:
    # Execute / Assert
    with pytest.raises(DataError, match="strictly between 0 and 1"):
        stratified_split([0, 1], test_fraction=fraction, seed=0)


def test_a_table_too_small_for_its_split_names_the_sizes(tmp_path: Path) -> None:
    # Prepare: two rows of each class; a test share of 0.2 takes round(0.4) = 0 of each
    path = tmp_path / "t.csv"
    path.write_text("x,y\n1,yes\n2,no\n3,yes\n4,no\n")

    # Execute
    with pytest.raises(DataError) as caught:
        load_table(path, label="y", test_fraction=0.2)
    dataset = load_table(path, label="y", test_fraction=0.5)

    # Assert
    assert str(caught.value) == (
        f"{path}: the test split has no rows; test_fraction 0.2 puts round(0.2 x rows) of each"
        " class in test, keeping one in train: label 'no' 2 rows -> 0, 'yes' 2 rows -> 0; use"
        " more rows, a larger test_fraction, or a separate test table (test_path)"
    )
    assert len(dataset.test) == 2  # negative control: a larger share leaves a test split


def test_an_empty_test_table_or_an_unmarked_split_is_refused(tmp_path: Path) -> None:
    # Prepare
    _frame(8).to_csv(tmp_path / "train.csv", index=False)
    _frame(8).iloc[:0].to_csv(tmp_path / "test.csv", index=False)
    marked = _frame(8).assign(part="train")
    marked.to_csv(tmp_path / "marked.csv", index=False)

    # Execute
    with pytest.raises(DataError) as empty:
        load_table(tmp_path / "train.csv", label="churn", test_path=tmp_path / "test.csv")
    with pytest.raises(DataError) as unmarked:
        load_table(tmp_path / "marked.csv", label="churn", split_column="part")

    # Assert
    assert str(empty.value) == f"{tmp_path / 'test.csv'}: the test table has no rows"
    assert str(unmarked.value) == (
        f"{tmp_path / 'marked.csv'}: the test split has no rows; no row of column 'part' says"
        " 'test'"
    )


def test_a_run_on_a_table_too_small_is_refused_before_its_run_directory(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "t.csv"
    path.write_text("a,b,y\n1,2,yes\n2,3,no\n3,1,yes\n4,2,no\n")
    overrides = ["data.name=table", f"data.path={str(path)!r}", "data.label=y"]
    overrides += ["partition.scheme=contiguous", "partition.num_parties=2"]
    config = load_config(None, overrides)

    # Execute
    with pytest.raises(DataError, match="the test split has no rows"):
        runner.train(config, tmp_path / "run")

    # Assert
    assert not (tmp_path / "run").exists()
