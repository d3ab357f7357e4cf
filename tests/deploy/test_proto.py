"""The generated protobuf code is what the proto in the repository generates."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROTO = Path("vfl/transport/proto/vfl.proto")


def test_generated_code_matches_the_proto(tmp_path: Path) -> None:
    # Prepare
    protoc = pytest.importorskip("grpc_tools.protoc", reason="grpcio-tools (dev extra) needed")
    source = ROOT / "src"

    # Execute
    status = protoc.main(
        [
            "protoc",
            f"-I{source}",
            f"--python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            str(source / PROTO),
        ]
    )

    # Assert
    assert status == 0
    for suffix in ("_pb2.py", "_pb2.pyi"):
        name = PROTO.with_name(PROTO.stem + suffix)
        assert (tmp_path / name).read_text() == (source / name).read_text(), name
