from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from vfl.data.idx import write_idx
from vfl.data.images import load_cifar10, load_fashion_mnist, load_mnist
from vfl.errors import DataError

from .fakes import write_cifar, write_mnist


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_loads_features_in_unit_range_with_row_position_ids(tmp_path: Path, gz: bool) -> None:
    # Prepare
    arrays = write_mnist(tmp_path, num_train=12, num_test=5, gz=gz)

    # Execute
    dataset = load_mnist(tmp_path)

    # Assert
    assert dataset.name == "mnist"
    assert dataset.classes == tuple("0123456789")
    assert dataset.train.features.shape == (12, 1, 28, 28)
    assert dataset.test.features.shape == (5, 1, 28, 28)
    assert dataset.train.features.dtype == np.float32
    assert dataset.train.features.min() >= 0.0 and dataset.train.features.max() <= 1.0
    np.testing.assert_allclose(
        dataset.train.features[:, 0] * 255, arrays["train-images-idx3-ubyte"], atol=1e-3
    )
    np.testing.assert_array_equal(dataset.test.labels, arrays["t10k-labels-idx1-ubyte"])
    np.testing.assert_array_equal(dataset.train.ids, np.arange(12))
    assert dataset.train.ids.dtype == np.int64 and dataset.train.labels.dtype == np.int64
    assert dataset.columns is None and dataset.is_image


def test_fashion_mnist_accepts_a_mix_of_raw_and_gzipped_files(tmp_path: Path) -> None:
    # Prepare
    write_mnist(tmp_path, gz=True)
    raw = tmp_path / "t10k-labels-idx1-ubyte"
    write_idx(raw, np.array([9, 0, 1, 2, 3], dtype=np.uint8))
    (tmp_path / "t10k-labels-idx1-ubyte.gz").unlink()

    # Execute
    dataset = load_fashion_mnist(tmp_path)

    # Assert
    assert dataset.name == "fashion-mnist"
    assert dataset.classes[0] == "T-shirt/top" and dataset.classes[9] == "Ankle boot"
    assert len(dataset.classes) == 10
    np.testing.assert_array_equal(dataset.test.labels, [9, 0, 1, 2, 3])


def test_label_count_that_differs_from_image_count_is_a_data_error(tmp_path: Path) -> None:
    # Prepare
    write_mnist(tmp_path, num_train=12)
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(11, dtype=np.uint8))

    # Execute / Assert
    with pytest.raises(DataError, match=r"12 images but .* 11 labels"):
        load_mnist(tmp_path)


def test_missing_mnist_file_names_both_accepted_names(tmp_path: Path) -> None:
    # Prepare
    write_mnist(tmp_path)
    (tmp_path / "t10k-images-idx3-ubyte").unlink()

    # Execute / Assert
    with pytest.raises(DataError, match=r"t10k-images-idx3-ubyte nor .*t10k-images-idx3-ubyte\.gz"):
        load_mnist(tmp_path)


def test_mnist_label_out_of_range_is_a_data_error(tmp_path: Path) -> None:
    # Prepare
    write_mnist(tmp_path, num_test=5)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.array([0, 1, 2, 3, 10], dtype=np.uint8))

    # Execute / Assert
    with pytest.raises(DataError, match=r"valid labels lie in \[0, 9\]"):
        load_mnist(tmp_path)


def test_mnist_images_with_wrong_dtype_are_a_data_error(tmp_path: Path) -> None:
    # Prepare
    write_mnist(tmp_path, num_train=12)
    write_idx(tmp_path / "train-images-idx3-ubyte", np.zeros((12, 28, 28), dtype=np.float32))

    # Execute / Assert
    with pytest.raises(DataError, match="must hold uint8 images"):
        load_mnist(tmp_path)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_cifar10_loads_channel_planes_and_label_names(tmp_path: Path, protocol: int) -> None:
    # Prepare
    batches = write_cifar(tmp_path, per_batch=3, protocol=protocol)

    # Execute
    dataset = load_cifar10(tmp_path)

    # Assert
    assert dataset.name == "cifar10"
    assert dataset.classes[0] == "airplane" and dataset.classes[9] == "truck"
    assert dataset.train.features.shape == (15, 3, 32, 32)
    assert dataset.test.features.shape == (3, 3, 32, 32)
    assert dataset.train.features.dtype == np.float32
    first = batches["data_batch_1"][b"data"][0]
    np.testing.assert_allclose(
        dataset.train.features[0, 1].ravel() * 255, first[1024:2048], atol=1e-3
    )
    second_batch_labels = batches["data_batch_2"][b"labels"]
    np.testing.assert_array_equal(dataset.train.labels[3:6], second_batch_labels)
    np.testing.assert_array_equal(dataset.test.ids, [0, 1, 2])


class _Payload:
    def __reduce__(self) -> tuple[object, tuple[()]]:
        return (os.getcwd, ())


def test_cifar10_pickle_referencing_other_globals_is_refused(tmp_path: Path) -> None:
    # Prepare
    write_cifar(tmp_path)
    evil = {b"data": np.zeros((1, 3072), dtype=np.uint8), b"labels": [0], b"x": _Payload()}
    (tmp_path / "cifar-10-batches-py" / "test_batch").write_bytes(pickle.dumps(evil, protocol=2))

    # Execute / Assert
    with pytest.raises(DataError, match=r"refusing to load global (posix|nt|os)\.getcwd"):
        load_cifar10(tmp_path)


def test_cifar10_batch_with_mismatched_label_count_is_a_data_error(tmp_path: Path) -> None:
    # Prepare
    write_cifar(tmp_path)
    bad = {b"data": np.zeros((2, 3072), dtype=np.uint8), b"labels": [0, 1, 2]}
    (tmp_path / "cifar-10-batches-py" / "data_batch_3").write_bytes(pickle.dumps(bad, protocol=2))

    # Execute / Assert
    with pytest.raises(DataError, match="2 images but 3 labels"):
        load_cifar10(tmp_path)


def test_cifar10_missing_files_are_listed(tmp_path: Path) -> None:
    # Prepare
    write_cifar(tmp_path)
    (tmp_path / "cifar-10-batches-py" / "data_batch_5").unlink()
    (tmp_path / "cifar-10-batches-py" / "batches.meta").unlink()

    # Execute / Assert
    with pytest.raises(DataError, match=r"lacks data_batch_5, batches\.meta"):
        load_cifar10(tmp_path)


def test_cifar10_batch_that_is_not_a_pickle_is_a_data_error(tmp_path: Path) -> None:
    # Prepare
    write_cifar(tmp_path)
    (tmp_path / "cifar-10-batches-py" / "test_batch").write_bytes(b"garbage")

    # Execute / Assert
    with pytest.raises(DataError, match="test_batch"):
        load_cifar10(tmp_path)


def test_cifar10_reads_pickles_that_name_numpy1_modules(tmp_path: Path) -> None:
    # Prepare: the real batches were pickled under numpy 1, whose helpers live in numpy.core
    batches = write_cifar(tmp_path, protocol=2)
    path = tmp_path / "cifar-10-batches-py" / "test_batch"
    raw = path.read_bytes()
    assert b"numpy._core.multiarray\n_reconstruct" in raw
    path.write_bytes(raw.replace(b"numpy._core.multiarray\n", b"numpy.core.multiarray\n"))

    # Execute
    dataset = load_cifar10(tmp_path)

    # Assert
    expected = batches["test_batch"][b"data"].reshape(-1, 3, 32, 32) / 255.0
    np.testing.assert_allclose(dataset.test.features, expected, atol=1e-6)
