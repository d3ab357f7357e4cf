from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from vfl.data.fetch import (
    Artifact,
    Downloader,
    FetchContext,
    data_dir,
    fetch_artifact,
    run_package_tool,
    urllib_download,
    verify_digest,
)
from vfl.errors import DataError

CONTENT = b"the real archive"
SHA256 = hashlib.sha256(CONTENT).hexdigest()


def _serve(content: bytes) -> tuple[list[str], Downloader]:
    calls: list[str] = []

    def download(url: str, dest: Path) -> None:
        calls.append(url)
        dest.write_bytes(content)

    return calls, download


def _artifact(**changes: object) -> Artifact:
    fields: dict[str, object] = {
        "url": "https://example.org/a.tgz",
        "filename": "a.tgz",
        "sha256": SHA256,
        "package_command": ("npm", "pack", "a@1"),
        "package_glob": "a-*.tgz",
    }
    fields.update(changes)
    return Artifact(**fields)  # type: ignore[arg-type]


def test_data_dir_prefers_vfl_data_dir_then_xdg_cache_then_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Prepare
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("VFL_DATA_DIR", str(tmp_path / "explicit"))

    # Execute
    explicit = data_dir()
    monkeypatch.delenv("VFL_DATA_DIR")
    xdg = data_dir()
    monkeypatch.delenv("XDG_CACHE_HOME")
    home = data_dir()

    # Assert
    assert explicit == tmp_path / "explicit"
    assert xdg == tmp_path / "xdg" / "vfl" / "data"
    assert home == tmp_path / "home" / ".cache" / "vfl" / "data"


def test_urllib_download_reads_file_urls(tmp_path: Path) -> None:
    # Prepare
    source = tmp_path / "source.bin"
    source.write_bytes(CONTENT)

    # Execute
    urllib_download(source.as_uri(), tmp_path / "copy.bin")

    # Assert
    assert (tmp_path / "copy.bin").read_bytes() == CONTENT


def test_urllib_download_refuses_other_schemes(tmp_path: Path) -> None:
    # Execute / Assert
    with pytest.raises(DataError, match="scheme 'ftp'"):
        urllib_download("ftp://example.org/x", tmp_path / "x")


def test_fetch_artifact_verifies_and_renames_the_download(tmp_path: Path) -> None:
    # Prepare
    calls, download = _serve(CONTENT)
    context = FetchContext(workdir=tmp_path, download=download, run_tool=None)

    # Execute
    path = fetch_artifact(_artifact(), context)

    # Assert
    assert path == tmp_path / "a.tgz" and path.read_bytes() == CONTENT
    assert calls == ["https://example.org/a.tgz"]
    assert not (tmp_path / "a.tgz.part").exists()


def test_checksum_mismatch_is_a_data_error_and_leaves_no_file(tmp_path: Path) -> None:
    # Prepare
    _, download = _serve(b"tampered")
    context = FetchContext(workdir=tmp_path, download=download, run_tool=None)

    # Execute / Assert
    with pytest.raises(DataError, match=f"expected {SHA256}"):
        fetch_artifact(_artifact(), context)
    assert list(tmp_path.iterdir()) == []


def test_failed_download_falls_back_on_the_package_tool(tmp_path: Path) -> None:
    # Prepare
    def unreachable(url: str, dest: Path) -> None:
        raise OSError("network is unreachable")

    commands: list[Sequence[str]] = []

    def tool(argv: Sequence[str], cwd: Path) -> None:
        commands.append(argv)
        (cwd / "a-1.0.tgz").write_bytes(CONTENT)

    context = FetchContext(workdir=tmp_path, download=unreachable, run_tool=tool)

    # Execute
    path = fetch_artifact(_artifact(), context)

    # Assert
    assert commands == [("npm", "pack", "a@1")]
    assert path.read_bytes() == CONTENT


def test_fallback_file_is_checked_against_the_same_checksum(tmp_path: Path) -> None:
    # Prepare
    def unreachable(url: str, dest: Path) -> None:
        raise OSError("network is unreachable")

    def tool(argv: Sequence[str], cwd: Path) -> None:
        (cwd / "a-2.0.tgz").write_bytes(b"a newer version")

    context = FetchContext(workdir=tmp_path, download=unreachable, run_tool=tool)

    # Execute / Assert
    with pytest.raises(DataError, match=r"network is unreachable.*npm pack a@1.*expected"):
        fetch_artifact(_artifact(), context)


def test_artifact_without_checksum_needs_explicit_permission(tmp_path: Path) -> None:
    # Prepare
    calls, download = _serve(CONTENT)
    artifact = _artifact(sha256=None)
    refusing = FetchContext(workdir=tmp_path, download=download, run_tool=None)
    allowing = FetchContext(
        workdir=tmp_path,
        download=download,
        run_tool=None,
        allow_unverified=True,
    )

    # Execute / Assert
    with pytest.raises(DataError, match="no checksum is known"):
        fetch_artifact(artifact, refusing)
    assert calls == []
    assert fetch_artifact(artifact, allowing).read_bytes() == CONTENT


def test_verify_digest_checks_md5(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "f"
    path.write_bytes(CONTENT)

    # Execute / Assert
    verify_digest(path, md5=hashlib.md5(CONTENT).hexdigest())
    with pytest.raises(DataError, match="has md5"):
        verify_digest(path, md5="0" * 32)


def test_run_package_tool_runs_in_the_given_folder(tmp_path: Path) -> None:
    # Execute
    run_package_tool([sys.executable, "-c", "open('made.txt', 'w').write('ok')"], tmp_path)

    # Assert
    assert (tmp_path / "made.txt").read_text() == "ok"


def test_run_package_tool_reports_missing_tools_and_failures(tmp_path: Path) -> None:
    # Execute / Assert
    with pytest.raises(DataError, match="no-such-tool-vfl is not installed"):
        run_package_tool(["no-such-tool-vfl", "pack"], tmp_path)
    with pytest.raises(DataError, match="exit code 3: boom"):
        run_package_tool(
            [sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"], tmp_path
        )
