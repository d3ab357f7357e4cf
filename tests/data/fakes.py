"""Writers of small files and archives in the real formats of each data source."""

from __future__ import annotations

import gzip
import io
import pickle
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vfl.data.idx import write_idx

MNIST_NAMES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)

# Rows in the UCI Adult layout; "?" marks a missing value.
ADULT_TRAIN_ROWS = [
    "39|State-gov|77516|Bachelors|13|Never-married|Adm-clerical|Not-in-family|White|Male|2174|0|40"
    "|United-States|<=50K",
    "50|Self-emp-not-inc|83311|Bachelors|13|Married-civ-spouse|Exec-managerial|Husband|White|Male"
    "|0|0|13|United-States|<=50K",
    "38|Private|215646|HS-grad|9|Divorced|Handlers-cleaners|Not-in-family|White|Male|0|0|40"
    "|United-States|<=50K",
    "53|Private|234721|11th|7|Married-civ-spouse|Handlers-cleaners|Husband|Black|Male|0|0|40"
    "|United-States|>50K",
    "28|?|338409|Bachelors|13|Married-civ-spouse|?|Wife|Black|Female|0|0|40|Cuba|>50K",
]
ADULT_TEST_ROWS = [
    "25|Private|226802|11th|7|Never-married|Machine-op-inspct|Own-child|Black|Male|0|0|40"
    "|United-States|<=50K.",
    "38|Private|89814|HS-grad|9|Married-civ-spouse|Farming-fishing|Husband|White|Male|0|0|50|?"
    "|<=50K.",
    "44|Local-gov|160323|Some-college|10|Married-civ-spouse|Machine-op-inspct|Husband|Black|Male"
    "|7688|0|40|Atlantis|>50K.",
]


def adult_text(rows: list[str], *, junk_line: bool) -> str:
    """Adult file text: fields joined by ", ", optional junk first line, blank trailing lines."""
    lines = ["|1x3 Cross validator"] if junk_line else []
    lines += [row.replace("|", ", ") for row in rows]
    return "\n".join(lines) + "\n\n"


def write_mnist(
    root: Path, *, num_train: int = 12, num_test: int = 5, gz: bool = False, seed: int = 0
) -> dict[str, np.ndarray]:
    """Write the four MNIST IDX files (28x28 uint8 images, labels 0..9) and return the arrays."""
    rng = np.random.default_rng(seed)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (num_train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": rng.integers(0, 10, num_train, dtype=np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (num_test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, num_test, dtype=np.uint8),
    }
    root.mkdir(parents=True, exist_ok=True)
    for name, array in arrays.items():
        write_idx(root / (f"{name}.gz" if gz else name), array, gzip=gz)
    return arrays


def cifar_batch(num: int, seed: int) -> dict[bytes, Any]:
    """A CIFAR-10 batch dict in the real layout: bytes keys, (N, 3072) uint8 rows, list labels."""
    rng = np.random.default_rng(seed)
    return {
        b"batch_label": b"training batch",
        b"labels": [int(label) for label in rng.integers(0, 10, num)],
        b"data": rng.integers(0, 256, (num, 3072), dtype=np.uint8),
        b"filenames": [f"img_{i}.png".encode() for i in range(num)],
    }


def write_cifar(
    root: Path, *, per_batch: int = 3, protocol: int = 2
) -> dict[str, dict[bytes, Any]]:
    """Write ``root/cifar-10-batches-py`` with the standard pickle module; return the batches."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    batches = {name: cifar_batch(per_batch, seed) for seed, name in enumerate(names)}
    labels = [b"airplane", b"automobile", b"bird", b"cat", b"deer"]
    labels += [b"dog", b"frog", b"horse", b"ship", b"truck"]
    meta = {b"num_cases_per_batch": per_batch, b"label_names": labels, b"num_vis": 3072}
    for name, content in [*batches.items(), ("batches.meta", meta)]:
        with (folder / name).open("wb") as file:
            pickle.dump(content, file, protocol=protocol)
    return batches


def write_adult(root: Path) -> None:
    """Write adult.data and adult.test in the UCI layout, blank trailing lines included."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "adult.data").write_text(adult_text(ADULT_TRAIN_ROWS, junk_line=False))
    (root / "adult.test").write_text(adult_text(ADULT_TEST_ROWS, junk_line=True))


def tar_gz(members: dict[str, bytes]) -> bytes:
    """A gzipped tar archive holding ``members`` (path -> content)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def ar_archive(members: dict[str, bytes]) -> bytes:
    """An ``ar`` archive (the container of a .deb), written field by field."""
    out = bytearray(b"!<arch>\n")
    for name, content in members.items():
        header = f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(content):<10}`\n"
        out += header.encode("ascii") + content + (b"\n" if len(content) % 2 else b"")
    return bytes(out)


def gz(content: bytes) -> bytes:
    return gzip.compress(content, mtime=0)


def zip_archive(members: dict[str, bytes]) -> bytes:
    """A zip archive (a wheel is one) holding ``members``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


CREDIT_FEATURES = [
    "LIMIT_BAL", "SEX", "EDUCATION", "MARRIAGE", "AGE",
    "PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6",
    "BILL_AMT1", "BILL_AMT2", "BILL_AMT3", "BILL_AMT4", "BILL_AMT5", "BILL_AMT6",
    "PAY_AMT1", "PAY_AMT2", "PAY_AMT3", "PAY_AMT4", "PAY_AMT5", "PAY_AMT6",
]  # fmt: skip


def credit_frame(num_rows: int = 40) -> pd.DataFrame:
    """A table in the UCI Default-of-Credit-Card CSV layout, one in five clients defaulting."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"ID": np.arange(1, num_rows + 1)})
    for column in CREDIT_FEATURES:
        frame[column] = rng.integers(-2, 9, num_rows) * (1000 if "AMT" in column else 1)
    frame["SEX"] = rng.integers(1, 3, num_rows)
    frame["default.payment.next.month"] = (np.arange(num_rows) % 5 == 0).astype(int)
    return frame
