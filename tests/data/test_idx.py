from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from vfl.data.idx import read_idx, write_idx
from vfl.errors import DataError

IDX_DTYPES = ("uint8", "int8", ">i2", "<i2", "int32", "float32", "float64")


@settings(max_examples=60, deadline=None)
@given(
    array=hnp.arrays(
        dtype=st.sampled_from(IDX_DTYPES).map(np.dtype),
        shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5),
    ),
    compress=st.booleans(),
)
def test_write_then_read_round_trips_any_shape_and_dtype(
    tmp_path_factory: pytest.TempPathFactory, array: np.ndarray, compress: bool
) -> None:
    # Prepare
    path = tmp_path_factory.mktemp("idx") / "array.idx"

    # Execute
    write_idx(path, array, gzip=compress)
    result = read_idx(path)

    # Assert
    assert result.shape == array.shape
    assert result.dtype == array.dtype.newbyteorder("=")
    np.testing.assert_array_equal(result, array)


def test_header_is_big_endian_with_the_magic_and_sizes(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "labels-idx1-ubyte"

    # Execute
    write_idx(path, np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int16))

    # Assert
    raw = path.read_bytes()
    assert raw[:4] == bytes([0, 0, 0x0B, 2])
    assert raw[4:12] == bytes([0, 0, 0, 2, 0, 0, 0, 3])
    assert raw[12:16] == bytes([0, 1, 0, 2])


def test_gzip_is_detected_by_magic_bytes_not_by_name(tmp_path: Path) -> None:
    # Prepare
    array = np.arange(6, dtype=np.uint8).reshape(2, 3)
    raw_path, gz_path = tmp_path / "raw.gz", tmp_path / "compressed-without-suffix"
    write_idx(raw_path, array)
    write_idx(gz_path, array, gzip=True)

    # Execute
    from_raw, from_gz = read_idx(raw_path), read_idx(gz_path)

    # Assert
    assert gz_path.read_bytes()[:2] == b"\x1f\x8b"
    np.testing.assert_array_equal(from_raw, array)
    np.testing.assert_array_equal(from_gz, array)


@pytest.mark.parametrize("compress", [False, True])
def test_truncated_file_is_a_data_error(tmp_path: Path, compress: bool) -> None:
    # Prepare
    path = tmp_path / "images-idx3-ubyte"
    write_idx(path, np.zeros((4, 28, 28), dtype=np.uint8))
    truncated = path.read_bytes()[:-100]
    path.write_bytes(gzip.compress(truncated) if compress else truncated)

    # Execute / Assert
    with pytest.raises(DataError, match="truncated"):
        read_idx(path)


def test_data_longer_than_the_header_says_is_a_size_mismatch(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "labels"
    write_idx(path, np.zeros(10, dtype=np.uint8))
    path.write_bytes(path.read_bytes() + b"\x00\x00")

    # Execute / Assert
    with pytest.raises(DataError, match="do not match"):
        read_idx(path)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (bytes([1, 0, 8, 1, 0, 0, 0, 0]), "bad magic"),
        (bytes([0, 0, 0x42, 1, 0, 0, 0, 0]), "unknown type code 0x42"),
        (bytes([0, 0, 8, 0]), "0 dimensions"),
        (bytes([0, 0, 8, 3, 0, 0, 0, 1]), "truncated"),
        (bytes([0, 0]), "truncated"),
    ],
)
def test_bad_header_is_a_data_error_naming_the_file(
    tmp_path: Path, header: bytes, message: str
) -> None:
    # Prepare
    path = tmp_path / "bad-idx"
    path.write_bytes(header)

    # Execute / Assert
    with pytest.raises(DataError, match=message) as error:
        read_idx(path)
    assert str(path) in str(error.value)


def test_corrupt_gzip_is_a_data_error(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "broken.gz"
    path.write_bytes(b"\x1f\x8b" + b"not really gzip")

    # Execute / Assert
    with pytest.raises(DataError, match="does not decompress"):
        read_idx(path)


def test_missing_file_is_a_data_error(tmp_path: Path) -> None:
    # Execute / Assert
    with pytest.raises(DataError, match="cannot read"):
        read_idx(tmp_path / "absent")


@pytest.mark.parametrize("array", [np.zeros(3, dtype=np.int64), np.zeros(3, dtype=bool)])
def test_writing_an_unsupported_dtype_lists_the_valid_ones(
    tmp_path: Path, array: np.ndarray
) -> None:
    # Execute / Assert
    with pytest.raises(
        DataError, match="valid dtypes: uint8, int8, int16, int32, float32, float64"
    ):
        write_idx(tmp_path / "x", array)


def test_writing_a_scalar_is_a_data_error(tmp_path: Path) -> None:
    # Execute / Assert
    with pytest.raises(DataError, match="1 to 255 dimensions"):
        write_idx(tmp_path / "x", np.uint8(3))
