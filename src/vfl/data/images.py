"""Loaders for the image data sets: MNIST, Fashion-MNIST (IDX files) and CIFAR-10 (pickle batches).

Every loader returns float32 features scaled to ``[0, 1]`` with shape ``(N, C, H, W)``. The sample
ids are ``int64`` row positions in the source files: ``0..N-1`` for the training split and
``0..M-1`` for the test split (the two ranges overlap; an id names a row within its split).
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from vfl.data.dataset import Dataset, Split
from vfl.data.idx import read_idx
from vfl.errors import DataError

MNIST_CLASSES = tuple(str(digit) for digit in range(10))
FASHION_MNIST_CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
CIFAR10_FOLDER = "cifar-10-batches-py"
CIFAR10_TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR10_FILES = (*CIFAR10_TRAIN_BATCHES, "test_batch", "batches.meta")
MNIST_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)

# The globals that CIFAR-10 pickles reference: numpy's array reconstruction helpers (under their
# numpy 1 and numpy 2 module names) and the codec that Python 3 protocol-2 pickles use for bytes.
_PICKLE_ALIASES: dict[tuple[str, str], tuple[str, str]] = {
    ("numpy.core.multiarray", "_reconstruct"): ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"): ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.numeric", "_frombuffer"): ("numpy._core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"): ("numpy._core.numeric", "_frombuffer"),
    ("numpy", "ndarray"): ("numpy", "ndarray"),
    ("numpy", "dtype"): ("numpy", "dtype"),
    ("_codecs", "encode"): ("_codecs", "encode"),
}


def load_mnist(root: Path | str) -> Dataset:
    """Load MNIST from the four IDX files in ``root`` (each may also carry a ``.gz`` suffix).

    Args:
        root: Folder holding ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
            ``t10k-images-idx3-ubyte`` and ``t10k-labels-idx1-ubyte``.

    Returns:
        The data set, features ``(N, 1, 28, 28)`` in ``[0, 1]``, classes ``"0"`` to ``"9"``.
    """
    return _load_idx_dataset(Path(root), name="mnist", classes=MNIST_CLASSES)


def load_fashion_mnist(root: Path | str) -> Dataset:
    """Load Fashion-MNIST from its four IDX files in ``root``, raw or gzipped.

    Args:
        root: Folder holding the same file names as MNIST, with or without ``.gz``.

    Returns:
        The data set, features ``(N, 1, 28, 28)`` in ``[0, 1]``, the ten clothing classes.
    """
    return _load_idx_dataset(Path(root), name="fashion-mnist", classes=FASHION_MNIST_CLASSES)


def load_cifar10(root: Path | str) -> Dataset:
    """Load CIFAR-10 from its python pickle batches in ``root/cifar-10-batches-py``.

    The pickles are read with an unpickler that only resolves numpy's array reconstruction helpers;
    any other global raises ``DataError``.

    Args:
        root: Folder holding ``cifar-10-batches-py/`` with ``data_batch_1`` to ``data_batch_5``,
            ``test_batch`` and ``batches.meta``.

    Returns:
        The data set, features ``(N, 3, 32, 32)`` in ``[0, 1]``, class names from ``batches.meta``.
    """
    folder = Path(root) / CIFAR10_FOLDER
    missing = [name for name in CIFAR10_FILES if not (folder / name).is_file()]
    if missing:
        raise DataError(f"CIFAR-10 folder {folder} lacks {', '.join(missing)}")
    meta = _read_cifar_pickle(folder / "batches.meta")
    classes = tuple(_decode(name) for name in _field(meta, "label_names", folder / "batches.meta"))
    batches = [_cifar_batch(folder / name, len(classes)) for name in CIFAR10_TRAIN_BATCHES]
    train_data = np.concatenate([data for data, _ in batches])
    train_labels = np.concatenate([labels for _, labels in batches])
    test_data, test_labels = _cifar_batch(folder / "test_batch", len(classes))
    return Dataset(
        name="cifar10",
        train=_split(_cifar_features(train_data), train_labels),
        test=_split(_cifar_features(test_data), test_labels),
        classes=classes,
    )


def _load_idx_dataset(root: Path, *, name: str, classes: tuple[str, ...]) -> Dataset:
    train = _idx_split(root, "train", num_classes=len(classes))
    test = _idx_split(root, "t10k", num_classes=len(classes))
    return Dataset(name=name, train=train, test=test, classes=classes)


def _idx_split(root: Path, prefix: str, *, num_classes: int) -> Split:
    images_path = _find_idx(root, f"{prefix}-images-idx3-ubyte")
    labels_path = _find_idx(root, f"{prefix}-labels-idx1-ubyte")
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.ndim != 3 or images.dtype != np.uint8:
        raise DataError(
            f"{images_path} must hold uint8 images of shape (N, H, W), got {images.dtype}"
            f" {images.shape}"
        )
    if labels.ndim != 1 or labels.dtype != np.uint8:
        raise DataError(
            f"{labels_path} must hold uint8 labels of shape (N,), got {labels.dtype} {labels.shape}"
        )
    if len(images) != len(labels):
        raise DataError(
            f"{images_path} holds {len(images)} images but {labels_path} holds {len(labels)}"
            " labels; the counts must be equal"
        )
    _check_labels(labels, num_classes, labels_path)
    features = (images.astype(np.float32) / 255.0)[:, None, :, :]  # (N, 1, H, W)
    return _split(features, labels)


def _find_idx(root: Path, name: str) -> Path:
    for candidate in (root / name, root / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    raise DataError(f"neither {root / name} nor {root / name}.gz exists")


def _check_labels(labels: npt.NDArray[np.generic], num_classes: int, source: Path) -> None:
    if len(labels) and (labels.min() < 0 or labels.max() >= num_classes):
        raise DataError(
            f"{source} has labels in [{labels.min()}, {labels.max()}]; valid labels lie in"
            f" [0, {num_classes - 1}]"
        )


def _split(features: npt.NDArray[np.float32], labels: npt.NDArray[np.generic]) -> Split:
    ids = np.arange(len(labels), dtype=np.int64)
    return Split(ids=ids, features=features, labels=labels.astype(np.int64))


class _CifarUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the globals CIFAR-10 batches need."""

    def find_class(self, module: str, name: str) -> Any:
        target = _PICKLE_ALIASES.get((module, name))
        if target is None:
            raise DataError(
                f"refusing to load global {module}.{name} from a CIFAR-10 pickle; only numpy array"
                " data is allowed"
            )
        return super().find_class(*target)


def _read_cifar_pickle(path: Path) -> Mapping[Any, Any]:
    try:
        with path.open("rb") as file:
            content = _CifarUnpickler(file, encoding="bytes").load()
    except DataError as error:
        raise DataError(f"{path}: {error}") from error
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as error:
        raise DataError(f"{path} is not a readable CIFAR-10 pickle batch: {error!r}") from error
    if not isinstance(content, Mapping):
        raise DataError(f"{path} must hold a dict, got {type(content).__name__}")
    return content


def _field(batch: Mapping[Any, Any], key: str, path: Path) -> Any:
    """Look ``key`` up as bytes (the CIFAR files' own keys) or as str (re-saved files)."""
    for candidate in (key.encode(), key):
        if candidate in batch:
            return batch[candidate]
    keys = ", ".join(repr(k) for k in batch)
    raise DataError(f"{path} has no {key!r} entry; it has {keys}")


def _cifar_batch(
    path: Path, num_classes: int
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.generic]]:
    """Return the ``(N, 3072)`` uint8 rows and the ``(N,)`` labels of one batch file."""
    batch = _read_cifar_pickle(path)
    data = _field(batch, "data", path)
    labels = np.asarray(_field(batch, "labels", path))
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2:
        raise DataError(f"{path}: 'data' must be a uint8 array of shape (N, 3072)")
    if data.shape[1] != 3 * 32 * 32:
        raise DataError(f"{path}: 'data' must have 3072 columns, got {data.shape[1]}")
    if labels.ndim != 1 or len(labels) != len(data) or not np.issubdtype(labels.dtype, np.integer):
        raise DataError(
            f"{path} holds {len(data)} images but {labels.size} labels of dtype {labels.dtype};"
            " there must be one integer label per image"
        )
    _check_labels(labels, num_classes, path)
    return data, labels


def _cifar_features(data: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    """Rows of three 1024-byte channel planes (R, G, B, each row-major) -> ``(N, 3, 32, 32)``."""
    return data.reshape(-1, 3, 32, 32).astype(np.float32) / np.float32(255.0)


def _decode(name: object) -> str:
    return name.decode() if isinstance(name, bytes) else str(name)
