"""The fitted table encoding: per-holder shares, JSON round trips, new rows transformed alike."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.data.encoding import TableEncoder, fit_encoder
from vfl.data.tabular import encode_table
from vfl.errors import DataError


def table(rows: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "income": rng.normal(50, 10, rows),
            "debt": rng.normal(20, 5, rows),
            "region": rng.choice(["north", "south", "east"], rows),
            "age": rng.integers(18, 80, rows).astype(float),
            "y": rng.integers(0, 2, rows),
        }
    )
    frame.loc[3, "age"] = np.nan
    frame.loc[5, "region"] = None
    return frame


def test_each_holders_own_fit_equals_the_joint_encoding_of_its_columns() -> None:
    # Prepare
    train, test = table(seed=0), table(seed=1)
    joint = encode_table(train, test, label="y")
    holders = [["income", "region"], ["debt", "age"]]

    # Execute: every holder fits on its own columns only
    blocks = [
        fit_encoder(train, test, columns, {"region"} & set(columns)).transform(test)
        for columns in holders
    ]

    # Assert: the same numbers as the joint encoding's columns of those holders
    for columns, block in zip(holders, blocks, strict=True):
        chosen = [i for i, source in enumerate(joint.column_sources) if source in columns]
        np.testing.assert_array_equal(block, joint.test_features[:, chosen])


def test_the_json_round_trip_keeps_the_encoding_exactly() -> None:
    # Prepare
    encoder = encode_table(table(seed=0), table(seed=1), label="y").encoder

    # Execute
    restored = TableEncoder.from_json(encoder.to_json())

    # Assert
    assert restored == encoder
    fresh = table(seed=2)
    np.testing.assert_array_equal(restored.transform(fresh), encoder.transform(fresh))


@settings(max_examples=30, deadline=None)
@given(values=st.lists(st.floats(-1e6, 1e6) | st.none(), min_size=2, max_size=40))
def test_numeric_columns_survive_json_for_any_values(values: list[float | None]) -> None:
    # Prepare
    frame = pd.DataFrame({"x": pd.array(values, dtype="Float64")})
    encoder = fit_encoder(frame, None, ["x"], set())

    # Execute / Assert
    restored = TableEncoder.from_json(encoder.to_json())
    np.testing.assert_array_equal(restored.transform(frame), encoder.transform(frame))


def test_a_new_table_missing_a_column_names_it() -> None:
    encoder = encode_table(table(), table(seed=1), label="y").encoder
    with pytest.raises(DataError, match=r"new\.csv has no column\(s\) \['debt'\]"):
        encoder.transform(table().drop(columns=["debt"]), where="new.csv")


def test_an_unseen_category_encodes_as_all_zeros_and_a_word_in_numbers_is_named() -> None:
    # Prepare
    encoder = encode_table(table(), table(seed=1), label="y").encoder.select(["region", "income"])
    new = table(rows=2, seed=3)
    new.loc[0, "region"] = "mars"

    # Execute
    features = encoder.transform(new)

    # Assert
    region = [i for i, s in enumerate(encoder.sources) if s == "region"]
    assert features[0, region].tolist() == [0.0] * len(region)
    new["income"] = new["income"].astype(object)
    new.loc[1, "income"] = "lots"
    with pytest.raises(DataError, match=r"'income' of new\.csv holds 'lots' at row 1"):
        encoder.transform(new, where="new.csv")


@pytest.mark.parametrize("text", ["{}", "[1]", '{"format": "other"}', "not json"])
def test_text_that_is_not_an_encoding_is_refused(text: str) -> None:
    with pytest.raises(DataError, match="not a fitted table encoding"):
        TableEncoder.from_json(text)
