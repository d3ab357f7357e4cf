"""Every cross-field config error, and every error of data that does not fit the config, stops
``vfl run`` before its run directory exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.run.variants import write_run_config
from vfl.cli import main

REFUSED: dict[str, tuple[tuple[str, ...], str]] = {
    "gradient compression with shared labels": (
        ("protocol.labels=shared", "compress.gradient.name=scalar", "compress.gradient.bits=4"),
        "compress.gradient",
    ),
    "a server-model compressor with private labels": (
        ("compress.server_model.name=scalar", "compress.server_model.bits=4"),
        "compress.server_model",
    ),
    "an active party that is not a party": (("protocol.active_party=5",), "active_party"),
    "PBM with a concatenating head": (
        ("privacy.mechanism=pbm", "model.bottom.output_activation=tanh"),
        "model.head.fusion",
    ),
    "PBM with unbounded embeddings": (
        ("privacy.mechanism=pbm", "model.head.fusion=sum"),
        "model.bottom.output_activation",
    ),
    "secure aggregation without PBM": (
        ("privacy.secure_aggregation=on", "model.head.fusion=sum"),
        "privacy.secure_aggregation",
    ),
    "sparsified top-k uploads": (
        ("lightweight.beta.value=0.3", "compress.embedding.name=topk"),
        "compress.embedding.name",
    ),
    "pruning after the upload with private labels": (
        ("lightweight.prune_at=after_upload",),
        "lightweight.prune_at",
    ),
    "a lightweight schedule for a party that does not exist": (
        ("lightweight.party=[{party = 7}]",),
        "lightweight.party",
    ),
    "the sequential schedule with shared labels": (
        ("protocol.labels=shared", "protocol.schedule=sequential"),
        "schedule",
    ),
    "momentum with Adam": (("train.optimizer.momentum=0.5",), "momentum"),
    "stopping without a target": (("target.stop=true",), "stop"),
    "lattice bits beyond its codebook": (
        ("compress.embedding.name=lattice", "compress.embedding.bits=12"),
        "bits",
    ),
    "a steps bit schedule without steps": (
        ("compress.embedding.name=scalar", "compress.embedding.schedule=steps"),
        "steps",
    ),
    "positive classes the data lacks": (("data.positive_classes=[5]",), "positive_classes"),
    "a column group naming an unknown column": (
        ('partition.groups=[["income"], ["debt"], ["nosuch"]]',),
        "nosuch",
    ),
    "an image partition of a table": (
        ("partition.scheme=halves", "partition.num_parties=2", "partition.groups=[]"),
        "halves",
    ),
    "a CNN bottom on a table": (("model.bottom.kind=cnn",), "cnn"),
    "an unknown data set": (("data.name=nosuch",), "nosuch"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_refused_run_writes_nothing(
    tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    overrides, named = REFUSED[case]
    config = write_run_config(tmp_path)
    run_dir = tmp_path / "run"
    sets = [arg for item in overrides for arg in ("--set", item)]

    # Execute
    status = main(["run", str(config), "--run-dir", str(run_dir), *sets])

    # Assert
    assert status == 2
    assert named in capsys.readouterr().err
    assert not run_dir.exists()


def test_a_valid_run_does_write_its_directory(tmp_path: Path) -> None:
    # Prepare: the negative control: the same config, unchanged, is accepted
    config = write_run_config(tmp_path)

    # Execute
    status = main(
        ["run", str(config), "--run-dir", str(tmp_path / "run"), "--set", "train.epochs=1"]
    )

    # Assert
    assert status == 0
    assert (tmp_path / "run/summary.json").exists()
