"""Copy selected members out of tar, zip and Debian (``ar``) archives without trusting their paths.

A *selector* maps a member's path (with any leading ``./`` removed) to the plain file name to write
it as in the destination folder, or to ``None`` to skip it. Output names are checked to be plain
file names, and an archive holding an absolute member path or one with a ``..`` component is
rejected, so nothing is ever written outside the destination.
"""

from __future__ import annotations

import io
import shutil
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import IO

from vfl.errors import DataError

Selector = Callable[[str], str | None]

AR_MAGIC = b"!<arch>\n"
_AR_HEADER_SIZE = 60
_DEB_TAR_SUFFIXES = {"": "r:", ".gz": "r:gz", ".xz": "r:xz", ".bz2": "r:bz2"}


def extract_tar(source: Path | bytes, dest: Path, select: Selector) -> list[Path]:
    """Copy the selected regular files of a (possibly compressed) tar archive into ``dest``.

    Args:
        source: The archive file, or its bytes.
        dest: The destination folder; it must exist.
        select: Maps member paths to output file names (``None`` skips the member).

    Returns:
        The files written.

    Raises:
        DataError: If the archive is unreadable, has an unsafe member path, or a selected member is
            not a regular file.
    """
    written = []
    try:
        fileobj = io.BytesIO(source) if isinstance(source, bytes) else None
        name = None if isinstance(source, bytes) else source
        with tarfile.open(name=name, fileobj=fileobj, mode="r:*") as archive:
            for member in archive:
                output = _selected(member.name, select, _label(source))
                if output is None:
                    continue
                stream = archive.extractfile(member) if member.isfile() else None
                if stream is None:
                    raise DataError(f"{_label(source)}: member {member.name} is not a regular file")
                written.append(_write(stream, dest, output))
    except (tarfile.TarError, EOFError, OSError) as error:
        raise DataError(f"cannot read tar archive {_label(source)}: {error}") from error
    return written


def extract_zip(source: Path, dest: Path, select: Selector) -> list[Path]:
    """Copy the selected files of a zip archive (a wheel, for example) into ``dest``.

    Args:
        source: The archive file.
        dest: The destination folder; it must exist.
        select: Maps member paths to output file names (``None`` skips the member).

    Returns:
        The files written.

    Raises:
        DataError: If the archive is unreadable or has an unsafe member path.
    """
    written = []
    try:
        with zipfile.ZipFile(source) as archive:
            for info in archive.infolist():
                output = _selected(info.filename, select, str(source))
                if output is None or info.is_dir():
                    continue
                with archive.open(info) as stream:
                    written.append(_write(stream, dest, output))
    except (zipfile.BadZipFile, OSError) as error:
        raise DataError(f"cannot read zip archive {source}: {error}") from error
    return written


def extract_deb(source: Path, dest: Path, select: Selector) -> list[Path]:
    """Copy selected files out of the ``data.tar.*`` member of a Debian package into ``dest``.

    A ``.deb`` is an ``ar`` archive; its data member may be an uncompressed, gzip, xz or bzip2 tar.
    Member paths are those the package installs, such as ``usr/share/doc/...``.

    Args:
        source: The ``.deb`` file.
        dest: The destination folder; it must exist.
        select: Maps installed paths to output file names (``None`` skips the file).

    Returns:
        The files written.

    Raises:
        DataError: If the package is malformed or its data member uses another compression (zstd).
    """
    members = read_ar(source)
    data_names = [name for name in members if name.startswith("data.tar")]
    if not data_names:
        raise DataError(f"{source} has no data.tar member; its members: {list(members)}")
    data_name = data_names[0]
    if data_name.removeprefix("data.tar") not in _DEB_TAR_SUFFIXES:
        raise DataError(
            f"{source}: cannot read {data_name}; supported: "
            + ", ".join(f"data.tar{suffix}" for suffix in _DEB_TAR_SUFFIXES)
            + f". Unpack it with `dpkg -x {source} DIR` and place the files by hand"
        )
    return extract_tar(members[data_name], dest, select)


def read_ar(source: Path) -> dict[str, bytes]:
    """Read the members of a System V / GNU ``ar`` archive, by name.

    Raises:
        DataError: If the file does not start with the ``!<arch>`` line, or a member header is
            malformed or truncated.
    """
    try:
        data = source.read_bytes()
    except OSError as error:
        raise DataError(f"cannot read {source}: {error}") from error
    if not data.startswith(AR_MAGIC):
        raise DataError(f"{source} is not an ar archive (a .deb): it lacks the !<arch> header")
    members: dict[str, bytes] = {}
    position = len(AR_MAGIC)
    while position < len(data):
        header = data[position : position + _AR_HEADER_SIZE]
        if len(header) < _AR_HEADER_SIZE or header[58:60] != b"`\n":
            raise DataError(f"{source}: malformed ar member header at byte {position}")
        name = header[:16].decode("ascii", errors="replace").strip().removesuffix("/")
        try:
            size = int(header[48:58].decode("ascii").strip())
        except ValueError as error:
            raise DataError(f"{source}: bad size in ar member header at byte {position}") from error
        start = position + _AR_HEADER_SIZE
        if start + size > len(data):
            raise DataError(f"{source} is truncated inside member {name!r}")
        members[name] = data[start : start + size]
        position = start + size + size % 2  # members are padded to an even offset
    return members


def _selected(member: str, select: Selector, archive: str) -> str | None:
    path = PurePosixPath(member.removeprefix("./"))
    if path.is_absolute() or ".." in path.parts:
        raise DataError(f"{archive} has an unsafe member path {member!r}; refusing to extract")
    return select(str(path))


def _write(stream: IO[bytes], dest: Path, output: str) -> Path:
    """Write ``stream`` to ``dest/output``, where ``output`` must be a plain file name."""
    if output in ("", ".", "..") or PurePosixPath(output).name != output or "\\" in output:
        raise DataError(f"refusing to write {output!r}: not a plain file name")
    target = dest / output
    with target.open("wb") as out:
        shutil.copyfileobj(stream, out, length=1 << 20)
    return target


def _label(source: Path | bytes) -> str:
    return "embedded tar data" if isinstance(source, bytes) else str(source)
