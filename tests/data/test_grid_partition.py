"""Image grids: top/bottom halves and any rows x cols split (the common two-party MNIST setup)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.config import PartitionConfig
from vfl.data.partition import image_partition
from vfl.errors import ConfigError


def test_a_two_by_one_grid_is_the_top_and_bottom_halves() -> None:
    # Execute
    partition = image_partition((1, 28, 28), "grid", 2, grid=(2, 1))

    # Assert
    assert [view.region for view in partition.views] == [(0, 14, 0, 28), (14, 28, 0, 28)]


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 6),
    cols=st.integers(1, 6),
    height=st.integers(6, 32),
    width=st.integers(6, 32),
)
def test_grid_cells_cover_every_pixel_exactly_once(
    rows: int, cols: int, height: int, width: int
) -> None:
    # Prepare
    images = np.arange(height * width, dtype=np.float32).reshape(1, 1, height, width)

    # Execute
    partition = image_partition((1, height, width), "grid", rows * cols, grid=(rows, cols))
    blocks = partition.blocks(images)

    # Assert: every pixel in exactly one block, parties numbered row by row
    pixels = np.concatenate([b.reshape(-1) for b in blocks])
    assert sorted(pixels.tolist()) == images.reshape(-1).tolist()
    assert [v.party for v in partition.views] == list(range(1, rows * cols + 1))
    firsts = [view.region[:1] + view.region[2:3] for view in partition.views]
    assert firsts == sorted(firsts)


def test_a_grid_that_does_not_match_the_party_count_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"grid: must be \[rows, cols\] with rows \* cols"):
        PartitionConfig(scheme="grid", num_parties=3, grid=(2, 1))
    with pytest.raises(ConfigError, match="grid: only used with scheme 'grid'"):
        PartitionConfig(scheme="strips", num_parties=2, grid=(2, 1))
    with pytest.raises(ConfigError, match="do not fit a 4 x 4 image"):
        image_partition((1, 4, 4), "grid", 5, grid=(5, 1))


def test_a_valid_grid_config_is_accepted() -> None:
    # Negative control for the refusals above
    assert PartitionConfig(scheme="grid", num_parties=2, grid=(2, 1)).grid == (2, 1)
