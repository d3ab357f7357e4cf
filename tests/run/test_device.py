"""``train.device``: the CPU path unchanged, accelerators where present (skipped without one)."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import make_vertical_data
from vfl.config import load_config
from vfl.errors import ConfigError
from vfl.models.device import model_device, resolve_device
from vfl.run.compose import build_session
from vfl.run.fit import fit

HAS_CUDA = torch.cuda.is_available()


def test_auto_picks_an_accelerator_only_where_one_exists() -> None:
    expected = "cuda" if HAS_CUDA else ("mps" if torch.backends.mps.is_available() else "cpu")
    assert resolve_device("auto").type == expected
    assert resolve_device("cpu") == torch.device("cpu")


@pytest.mark.skipif(HAS_CUDA, reason="this machine has CUDA")
def test_asking_for_cuda_without_it_names_the_setting() -> None:
    with pytest.raises(ConfigError, match=r"train\.device = 'cuda'"):
        resolve_device("cuda")


def test_a_module_without_parameters_lives_on_the_cpu() -> None:
    assert model_device(torch.nn.Identity()) == torch.device("cpu")


def test_the_explicit_cpu_device_trains_exactly_like_the_default() -> None:
    # Prepare
    data = make_vertical_data(num_train=64, num_test=16)
    runs = [
        build_session(load_config(None, list(extra)), data) for extra in ([], ["train.device=cpu"])
    ]

    # Execute
    for run in runs:
        fit(run, epochs=2, progress=False)

    # Assert
    for a, b in zip(runs[0].parties, runs[1].parties, strict=True):
        for p, q in zip(a.model.parameters(), b.model.parameters(), strict=True):
            assert torch.equal(p, q)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize(
    "protocol",
    [
        [],
        ["protocol.labels=shared", "compress.embedding.name=scalar", "compress.embedding.bits=8"],
        ["protocol.mode=centralized"],
    ],
)
def test_training_on_cuda_matches_the_cpu_within_float_noise(protocol: list[str]) -> None:
    # Prepare
    data = make_vertical_data(num_train=256, num_test=64)
    cpu = build_session(load_config(None, protocol), data)
    gpu = build_session(load_config(None, [*protocol, "train.device=cuda"]), data)

    # Execute
    cpu_records = fit(cpu, epochs=3, progress=False)
    gpu_records = fit(gpu, epochs=3, progress=False)

    # Assert: the same accuracy (same init and batches; float noise only)
    assert abs(cpu_records[-1]["test_accuracy"] - gpu_records[-1]["test_accuracy"]) <= 0.05
    if not protocol or protocol[0] != "protocol.mode=centralized":
        assert all(
            p.device.type == "cuda" for party in gpu.parties for p in party.model.parameters()
        )
