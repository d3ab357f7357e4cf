"""Where a registered data set's files are, given a folder or one of its files (``data.path``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from vfl.errors import DataError

Files = Sequence[Sequence[str]]
"""Each required file as its accepted names, relative to the data set's folder."""


def locate(name: str, path: Path, files: Files, *, by_hand: str, one_file: bool) -> Path:
    """What to hand the loader of data set ``name`` for ``path``: its folder, or its one file.

    ``path`` may be the folder that holds the files (or, for files kept in a subfolder such as
    ``cifar-10-batches-py/``, that subfolder), or one of the files: its folder is then used. A
    data set whose loader reads ``one_file`` takes that file under any name.

    Raises:
        DataError: if ``path`` does not exist, is a file the data set does not read, or its
            folder lacks some of the files.
    """
    if path.is_file():
        if one_file:
            return path
        folder = _folder_of_file(path, files)
        if folder is None:
            raise DataError(
                f"{path} is not a file of data set {name!r}, which reads {_listing(files)} from"
                " one folder; name that folder or one of those files"
            )
    elif path.is_dir():
        folder = _parent_if_subfolder(path, files)
    else:
        folder = path
    if not all(any((folder / accepted).is_file() for accepted in names) for names in files):
        raise DataError(f"data set {name!r} is not in {folder}; place {by_hand} there")
    return folder


def _folder_of_file(path: Path, files: Files) -> Path | None:
    for names in files:
        for accepted in names:
            parts = PurePosixPath(accepted).parts
            if path.parts[-len(parts) :] == parts:
                return path.parents[len(parts) - 1]
    return None


def _parent_if_subfolder(path: Path, files: Files) -> Path:
    """``path``'s parent when ``path`` is the subfolder that every file lives in."""
    parts = [PurePosixPath(names[0]).parts for names in files]
    tops = {names[0] if len(names) > 1 else "" for names in parts}
    return path.parent if tops == {path.name} else path


def _listing(files: Files) -> str:
    return ", ".join(names[0] for names in files)
