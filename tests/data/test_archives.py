from __future__ import annotations

import io
import lzma
import tarfile
import zipfile
from pathlib import Path

import pytest

from vfl.data.archives import extract_deb, extract_tar, extract_zip, read_ar
from vfl.errors import DataError

from .fakes import ar_archive, tar_gz, zip_archive


def _tar(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def test_extract_tar_writes_only_selected_members_under_their_new_names(tmp_path: Path) -> None:
    # Prepare
    archive = tmp_path / "a.tgz"
    archive.write_bytes(tar_gz({"./package/data/x": b"xx", "package/data/y": b"y", "other": b"o"}))
    dest = tmp_path / "out"
    dest.mkdir()
    wanted = {"package/data/x": "x.bin", "package/data/y": "y.bin"}

    # Execute
    written = extract_tar(archive, dest, wanted.get)

    # Assert
    assert sorted(path.name for path in written) == ["x.bin", "y.bin"]
    assert sorted(path.name for path in dest.iterdir()) == ["x.bin", "y.bin"]
    assert (dest / "x.bin").read_bytes() == b"xx"


@pytest.mark.parametrize("member", ["../evil", "package/../../evil", "/tmp/evil"])
def test_extract_tar_refuses_member_paths_that_escape(tmp_path: Path, member: str) -> None:
    # Prepare
    archive = tmp_path / "a.tgz"
    archive.write_bytes(tar_gz({member: b"evil"}))
    dest = tmp_path / "deep" / "out"
    dest.mkdir(parents=True)

    # Execute / Assert
    with pytest.raises(DataError, match="unsafe member path"):
        extract_tar(archive, dest, lambda name: "evil")
    assert not (tmp_path / "deep" / "evil").exists() and not (tmp_path / "evil").exists()


def test_selector_output_must_be_a_plain_file_name(tmp_path: Path) -> None:
    # Prepare
    archive = tmp_path / "a.tgz"
    archive.write_bytes(tar_gz({"x": b"x"}))
    dest = tmp_path / "out"
    dest.mkdir()

    # Execute / Assert
    with pytest.raises(DataError, match="not a plain file name"):
        extract_tar(archive, dest, lambda name: "../x")


def test_selected_symlink_is_refused(tmp_path: Path) -> None:
    # Prepare
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        link = tarfile.TarInfo("data/link")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    archive = tmp_path / "a.tar"
    archive.write_bytes(buffer.getvalue())

    # Execute / Assert
    with pytest.raises(DataError, match="not a regular file"):
        extract_tar(archive, tmp_path, lambda name: "link")


def test_corrupt_tar_is_a_data_error(tmp_path: Path) -> None:
    # Prepare
    archive = tmp_path / "a.tgz"
    archive.write_bytes(tar_gz({"x": b"x" * 1000})[:30])

    # Execute / Assert
    with pytest.raises(DataError, match="cannot read tar archive"):
        extract_tar(archive, tmp_path, lambda name: name)


def test_extract_zip_reads_selected_members(tmp_path: Path) -> None:
    # Prepare
    archive = tmp_path / "pkg-0.1-py3-none-any.whl"
    archive.write_bytes(zip_archive({"pkg/data/a.txt": b"a", "pkg/__init__.py": b""}))
    dest = tmp_path / "out"
    dest.mkdir()

    # Execute
    written = extract_zip(archive, dest, {"pkg/data/a.txt": "a.txt"}.get)

    # Assert
    assert written == [dest / "a.txt"]
    assert (dest / "a.txt").read_bytes() == b"a"


def test_extract_zip_refuses_escaping_paths_and_non_zip_files(tmp_path: Path) -> None:
    # Prepare
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("../evil.txt", b"x")
    not_zip = tmp_path / "plain.zip"
    not_zip.write_bytes(b"plain")

    # Execute / Assert
    with pytest.raises(DataError, match="unsafe member path"):
        extract_zip(evil, tmp_path, lambda name: "evil.txt")
    with pytest.raises(DataError, match="cannot read zip archive"):
        extract_zip(not_zip, tmp_path, lambda name: name)


def test_read_ar_handles_odd_member_sizes(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "p.deb"
    path.write_bytes(ar_archive({"debian-binary": b"2.0\n", "odd": b"abc", "after": b"zz"}))

    # Execute
    members = read_ar(path)

    # Assert
    assert members == {"debian-binary": b"2.0\n", "odd": b"abc", "after": b"zz"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"PK\x03\x04 not ar", "not an ar archive"),
        (b"!<arch>\nshort header", "malformed ar member header"),
    ],
)
def test_read_ar_rejects_malformed_archives(tmp_path: Path, content: bytes, message: str) -> None:
    # Prepare
    path = tmp_path / "p.deb"
    path.write_bytes(content)

    # Execute / Assert
    with pytest.raises(DataError, match=message):
        read_ar(path)


def test_read_ar_detects_a_truncated_member(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "p.deb"
    path.write_bytes(ar_archive({"data.tar.xz": b"x" * 100})[:-10])

    # Execute / Assert
    with pytest.raises(DataError, match=r"truncated inside member 'data\.tar\.xz'"):
        read_ar(path)


@pytest.mark.parametrize("compression", ["xz", "gz", ""])
def test_extract_deb_reads_the_data_tar(tmp_path: Path, compression: str) -> None:
    # Prepare
    tar = _tar({"./usr/share/x/file.gz": b"payload", "./usr/bin/tool": b"bin"})
    packed = {
        "xz": lzma.compress(tar),
        "gz": tar_gz({"./usr/share/x/file.gz": b"payload"}),
        "": tar,
    }
    name = f"data.tar.{compression}" if compression else "data.tar"
    deb = tmp_path / "p.deb"
    deb.write_bytes(
        ar_archive({"debian-binary": b"2.0\n", "control.tar.xz": b"", name: packed[compression]})
    )
    dest = tmp_path / "out"
    dest.mkdir()

    # Execute
    extract_deb(deb, dest, lambda member: "file.gz" if member == "usr/share/x/file.gz" else None)

    # Assert
    assert (dest / "file.gz").read_bytes() == b"payload"
    assert [path.name for path in dest.iterdir()] == ["file.gz"]


def test_extract_deb_with_zstd_data_is_a_clear_data_error(tmp_path: Path) -> None:
    # Prepare
    deb = tmp_path / "p.deb"
    deb.write_bytes(ar_archive({"debian-binary": b"2.0\n", "data.tar.zst": b"\x28\xb5\x2f\xfd"}))

    # Execute / Assert
    with pytest.raises(DataError, match=r"cannot read data\.tar\.zst.*dpkg -x"):
        extract_deb(deb, tmp_path, lambda member: None)
