from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vfl.data.partition import Partition, image_partition, table_partition
from vfl.errors import ConfigError

COLUMNS = ("age", "sex=F", "sex=M", "income", "city=A", "city=B", "city=missing")
SOURCES = ("age", "sex", "sex", "income", "city", "city", "city")


def test_quadrants_cover_the_image_once() -> None:
    # Prepare
    images = np.arange(2 * 1 * 28 * 28, dtype=np.float32).reshape(2, 1, 28, 28)

    # Execute
    blocks = image_partition((1, 28, 28), "quadrants", 4).blocks(images)

    # Assert
    assert [b.shape for b in blocks] == [(2, 1, 14, 14)] * 4
    top = np.concatenate(blocks[:2], axis=3)
    bottom = np.concatenate(blocks[2:], axis=3)
    assert np.array_equal(np.concatenate([top, bottom], axis=2), images)


def test_halves_are_left_and_right() -> None:
    partition = image_partition((1, 28, 28), "halves", 2)
    assert [v.region for v in partition.views] == [(0, 28, 0, 14), (0, 28, 14, 28)]


@given(width=st.integers(4, 40), parties=st.integers(1, 12))
def test_strips_tile_the_width_without_gaps(width: int, parties: int) -> None:
    # Prepare
    parties = min(parties, width)

    # Execute
    regions = [v.region for v in image_partition((3, 5, width), "strips", parties).views]

    # Assert
    assert regions[0][2] == 0 and regions[-1][3] == width
    assert all(a[3] == b[2] for a, b in itertools.pairwise(regions))
    assert all(r[3] > r[2] for r in regions)
    assert max(r[3] - r[2] for r in regions) - min(r[3] - r[2] for r in regions) <= 1


def test_too_many_strips_is_an_error() -> None:
    with pytest.raises(ConfigError, match="29 strips do not fit an image 28 pixels wide"):
        image_partition((1, 28, 28), "strips", 29)


def test_table_schemes_do_not_apply_to_images() -> None:
    with pytest.raises(ConfigError, match="does not apply to images"):
        image_partition((1, 28, 28), "columns", 2)


def test_explicit_groups_keep_one_hot_columns_together() -> None:
    # Execute
    partition = table_partition(
        COLUMNS, SOURCES, "columns", 2, groups=[["age", "sex"], ["income", "city"]]
    )

    # Assert
    assert partition.views[0].column_names == ("age", "sex=F", "sex=M")
    assert partition.views[1].columns == (3, 4, 5, 6)


def test_groups_may_name_encoded_columns() -> None:
    partition = table_partition(
        COLUMNS, SOURCES, "columns", 2, groups=[["age", "sex=F", "sex=M"], ["income", "city"]]
    )
    assert partition.views[0].columns == (0, 1, 2)


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([["age", "sex"], ["income"]], "leave 1 column.s. with no party: city .3 encoded"),
        ([["age", "sex", "city"], ["income", "city"]], "given to both party 1 and party 2"),
        ([["age", "sex", "zip"], ["income", "city"]], "no column named 'zip'; valid: age, sex"),
        ([[], ["age", "sex", "income", "city"]], r"groups\[0\] is empty"),
    ],
)
def test_bad_groups_are_clear_errors(groups: list[list[str]], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        table_partition(COLUMNS, SOURCES, "columns", 2, groups=groups)


@given(
    parties=st.integers(1, 4),
    seed=st.integers(0, 1000),
    scheme=st.sampled_from(["contiguous", "random"]),
)
def test_automatic_table_splits_assign_every_column_once(
    parties: int, seed: int, scheme: str
) -> None:
    # Execute
    partition = table_partition(COLUMNS, SOURCES, scheme, parties, seed=seed)

    # Assert
    assigned = sorted(c for v in partition.views for c in v.columns)
    assert assigned == list(range(len(COLUMNS)))
    assert all(v.columns for v in partition.views)
    for view in partition.views:  # one-hot groups never straddle parties
        owners = {SOURCES[c] for c in view.columns}
        assert all(
            set(np.flatnonzero([s == o for s in SOURCES])) <= set(view.columns) for o in owners
        )


def test_random_split_is_seeded() -> None:
    a = table_partition(COLUMNS, SOURCES, "random", 2, seed=1)
    b = table_partition(COLUMNS, SOURCES, "random", 2, seed=1)
    assert a == b


def test_too_many_parties_for_the_columns() -> None:
    with pytest.raises(ConfigError, match="5 parties cannot share 4 columns"):
        table_partition(COLUMNS, SOURCES, "contiguous", 5)


def test_partition_json_round_trips() -> None:
    for partition in (
        image_partition((1, 28, 28), "strips", 7),
        table_partition(COLUMNS, SOURCES, "random", 3, seed=2),
    ):
        assert Partition.from_json(partition.to_json()) == partition
