"""Every path of a run with ``train.device = "cuda"``, on a fake CUDA device played by the CPU.

The fake (``fake_accelerator``) fails where CUDA fails: a CPU tensor meeting one on the device,
``.numpy()`` of a device tensor, a CUDA checkpoint read without ``map_location`` on a CPU-only
machine. Each path runs as the user runs it (``vfl run``, ``vfl attack``, ``vfl predict``, a
deployed party's messages) and must give exactly what the same run gives on the CPU: the fake
computes with the CPU's kernels, so any difference is a step the device path does differently.
Each checkpoint is read back outside the fake, where it must need ``map_location``: the run
really had its tensors on the device (a control against a run that quietly stayed on the CPU).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch

from tests.deploy.test_psi import party_tables
from tests.device.fake_accelerator import fake_cuda_device
from tests.run.variants import VARIANTS, without_time, write_run_config
from vfl.cli import main
from vfl.config import load_config
from vfl.config.io import to_toml
from vfl.deploy.alignment import Alignment
from vfl.deploy.config import party_view
from vfl.deploy.messages import CheckpointRequest, ExportRequest, SetupReply, SetupRequest
from vfl.deploy.party import PartyRuntime
from vfl.deploy.state import PartyState
from vfl.run import bundles
from vfl.transport import PartyEndpoint
from vfl.wire import SPLIT_TEST, EmbedReply, EmbedRequest, EvalRequest, GradRequest, Message
from vfl.wire.frames import decode, encode

SMALL = ("train.epochs=2", "train.batch_size=100", "output.progress=false")
"""Four rounds an epoch over the 400-row table of ``write_run_config``."""

PATHS: dict[str, tuple[str, ...]] = {
    **VARIANTS,
    "lvfl-pruned-and-sparsified": (
        "lightweight.alpha.kind=steps",
        "lightweight.alpha.steps=[[0, 0.0], [3, 0.5]]",
        "lightweight.beta.value=0.3",
    ),
    "lvfl-shared-labels": (
        "protocol.labels=shared",
        "lightweight.alpha.kind=steps",
        "lightweight.alpha.steps=[[0, 0.0], [3, 0.5]]",
        "lightweight.beta.value=0.3",
    ),
    "gaussian-gradient-noise": (
        "privacy.gradient_noise.noise_multiplier=1.0",
        "privacy.gradient_noise.clip=1.0",
    ),
    "pbm-without-secure-aggregation": (
        "privacy.mechanism=pbm",
        "privacy.trials=16",
        "privacy.secure_aggregation=off",
        "model.head.fusion=sum",
        "model.bottom.output_activation=tanh",
    ),
    "scalar-both-ways": (
        "compress.embedding.name=scalar",
        "compress.embedding.bits=4",
        "compress.gradient.name=scalar",
        "compress.gradient.bits=4",
    ),
    "lattice-gradients": ("compress.gradient.name=lattice", "compress.gradient.bits=3"),
    "topk-magnitude-compressed-evaluation": (
        "compress.embedding.name=topk",
        "compress.embedding.ratio=0.5",
        "compress.evaluation=on",
    ),
    "centralized": ("protocol.mode=centralized",),
}
"""Every protocol variant, plus the paths the variants do not cover: every compressor, LVFL with
pruning inside the run, both privacy mechanisms with and without secure aggregation, gradient
noise, compressed evaluation, the centralized baseline."""

ATTACKS: dict[str, tuple[str, ...]] = {
    "label_inference": ("attack.name=label_inference",),
    "model_completion": (
        "attack.name=model_completion",
        "attack.model_completion.labels=4",
        "attack.model_completion.epochs=10",
    ),
    "feature_reconstruction": (
        "attack.name=feature_reconstruction",
        "attack.role=server",
        "attack.feature_reconstruction.epochs=2",
        "attack.feature_reconstruction.hidden=[8]",
    ),
}


def sets(*overrides: str) -> list[str]:
    return [arg for item in (*SMALL, *overrides) for arg in ("--set", item)]


def metrics(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return without_time([json.loads(line) for line in lines])


def assert_saved_on_the_device(run_dir: Path) -> None:
    """Outside the fake, the run's checkpoint needs ``map_location``: it holds CUDA tensors."""
    assert not torch.cuda.is_available()
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        torch.load(run_dir / "checkpoint.pt", weights_only=True)


def run_on_both(tmp_path: Path, command: str, overrides: tuple[str, ...]) -> tuple[Path, Path]:
    """``vfl COMMAND`` on the CPU and on the fake CUDA device; both run directories."""
    config = write_run_config(tmp_path)
    on_cpu, on_cuda = tmp_path / "cpu", tmp_path / "cuda"
    assert main([command, str(config), "--run-dir", str(on_cpu), *sets(*overrides)]) == 0
    with fake_cuda_device():
        cuda = sets(*overrides, "train.device=cuda")
        assert main([command, str(config), "--run-dir", str(on_cuda), *cuda]) == 0
    return on_cpu, on_cuda


@pytest.mark.parametrize("path", list(PATHS))
def test_every_path_trains_on_cuda_exactly_as_on_the_cpu(tmp_path: Path, path: str) -> None:
    # Execute
    on_cpu, on_cuda = run_on_both(tmp_path, "run", PATHS[path])

    # Assert
    assert metrics(on_cuda) == metrics(on_cpu)
    assert_saved_on_the_device(on_cuda)


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_every_attack_runs_beside_a_cuda_run_exactly_as_beside_a_cpu_run(
    tmp_path: Path, attack: str
) -> None:
    # Execute
    on_cpu, on_cuda = run_on_both(tmp_path, "attack", ATTACKS[attack])

    # Assert
    cuda_records = metrics(on_cuda)
    assert cuda_records == metrics(on_cpu)
    assert any(key.startswith("attack_") for key in cuda_records[-1])


def test_a_cuda_checkpoint_resumes_on_cuda_and_on_a_cpu_only_machine(tmp_path: Path) -> None:
    # Prepare: a straight CPU run, and one epoch of the same run on CUDA
    config = write_run_config(tmp_path)
    straight, first = tmp_path / "straight", tmp_path / "cuda"
    assert main(["run", str(config), "--run-dir", str(straight), *sets()]) == 0
    with fake_cuda_device():
        once = sets("train.device=cuda", "train.epochs=1")
        assert main(["run", str(config), "--run-dir", str(first), *once]) == 0
    elsewhere = tmp_path / "moved"
    shutil.copytree(first, elsewhere)

    # Execute: resume on CUDA, and on a machine without it
    with fake_cuda_device():
        assert main(["run", "--resume", str(first), "--set", "train.epochs=2"]) == 0
    resume_here = ["--set", "train.epochs=2", "--set", "train.device=cpu"]
    assert main(["run", "--resume", str(elsewhere), *resume_here]) == 0

    # Assert
    assert metrics(first) == metrics(straight)
    assert metrics(elsewhere) == metrics(straight)
    assert_saved_on_the_device(first)


def test_a_cuda_trained_run_predicts_on_a_cpu_only_machine(tmp_path: Path) -> None:
    # Prepare
    on_cpu, on_cuda = run_on_both(tmp_path, "run", ())

    # Execute: outside the fake (no CUDA)
    for run_dir in (on_cpu, on_cuda):
        assert main(["predict", str(run_dir)]) == 0

    # Assert
    cuda = pd.read_csv(on_cuda / "predictions.csv")
    pd.testing.assert_frame_equal(cuda, pd.read_csv(on_cpu / "predictions.csv"))
    assert len(cuda) == 80


def request(party: PartyEndpoint, message: Message) -> Message:
    """One request through the wire, as the party's gRPC servicer handles it."""
    reply = decode(party.handle_frame(encode(message, sender=0))).message
    return reply


def test_a_deployed_party_trains_on_its_own_cuda_device_and_restarts_on_the_cpu(
    tmp_path: Path,
) -> None:
    # Prepare: a party whose PARTY.toml says device = "cuda", in a run whose config says cpu
    config = load_config(write_run_config(tmp_path), ["model.bottom.embedding_dim=4"])
    tables = party_tables({"train": [f"r{i}" for i in range(8)], "test": ["t0", "t1"]}, seed=0)
    rows = {0: np.arange(8, dtype=np.int64), 1: np.arange(2, dtype=np.int64)}
    setup = SetupRequest(
        round=0,
        config=to_toml(party_view(config)),
        alignment="aaaa",
        restore_round=-1,
        num_parties=1,
        num_classes=2,
        labels=torch.zeros(0, dtype=torch.int64),
    )
    ids = torch.tensor([3, 0, 5, 6])

    # Execute: set up, one round, an evaluation, a checkpoint and the bundle, all on "cuda"
    with fake_cuda_device():
        state = PartyState(tmp_path / "state", resume=False)
        state.save_alignment(Alignment("aaaa", rows))
        runtime = PartyRuntime(1, tables, state, device="cuda")
        party = PartyEndpoint(1, runtime.handle)
        assert isinstance(request(party, setup), SetupReply)
        embedding = request(party, EmbedRequest(round=0, ids=ids))
        request(party, GradRequest(round=0, grad=torch.full((4, 4), 0.1)))
        evaluated = request(party, EvalRequest(round=1, ids=torch.tensor([0, 1]), split=SPLIT_TEST))
        request(party, CheckpointRequest(round=1))
        request(party, ExportRequest(round=1, fingerprint="f" * 64))
        assert runtime.party is not None
        assert all(p.is_cuda for p in runtime.party.model.parameters())
    # ... and restart it with device = "cpu" from that checkpoint, on a CPU-only machine
    restarted = PartyRuntime(1, tables, PartyState(tmp_path / "state", resume=True), device="cpu")
    again = PartyEndpoint(1, restarted.handle)
    assert isinstance(
        request(again, SetupRequest(**{**vars(setup), "restore_round": 1})), SetupReply
    )
    evaluated_again = request(
        again, EvalRequest(round=1, ids=torch.tensor([0, 1]), split=SPLIT_TEST)
    )

    # Assert
    assert isinstance(embedding, EmbedReply) and embedding.embedding.shape == (4, 4)
    assert isinstance(evaluated, EmbedReply) and isinstance(evaluated_again, EmbedReply)
    assert torch.equal(evaluated.embedding, evaluated_again.embedding)
    bundle = bundles.load_party(tmp_path / "state" / bundles.BUNDLE / bundles.party_folder(1))
    assert not any(p.is_cuda for p in bundle.model.parameters())
