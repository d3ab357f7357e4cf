"""A party's own ``device`` in PARTY.toml: it trains there, whatever the run's ``train.device``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Literal

import pytest
import torch

from tests.deploy.test_psi import party_tables
from vfl.config import load_config
from vfl.config.io import from_mapping
from vfl.deploy.config import PartyConfig
from vfl.deploy.party import PartyRuntime, run_party
from vfl.deploy.state import PartyState
from vfl.errors import ConfigError


def runtime(tmp_path: Path, device: Literal["", "cpu"]) -> PartyRuntime:
    tables = party_tables({"train": ["a", "b"], "test": ["c"]}, seed=0)
    return PartyRuntime(1, tables, PartyState(tmp_path / "state", resume=False), device=device)


def test_the_party_builds_on_its_own_device_and_keeps_the_shared_config(tmp_path: Path) -> None:
    # Prepare
    shared = load_config(None, ["train.device=auto"])

    # Execute
    own = runtime(tmp_path, "cpu")._on_own_device(shared)

    # Assert
    assert own.train.device == "cpu"
    assert shared.train.device == "auto"  # what the server sent is untouched
    assert replace(own, train=shared.train) == shared  # nothing else changed


def test_without_its_own_device_the_party_follows_the_run(tmp_path: Path) -> None:
    # Prepare
    shared = load_config(None, ["train.device=auto"])

    # Execute
    own = runtime(tmp_path, "")._on_own_device(shared)

    # Assert
    assert own is shared


def party_config(tmp_path: Path, device: str) -> PartyConfig:
    return from_mapping(
        PartyConfig,
        {
            "party_id": 1,
            "server": "localhost:50051",
            "state_dir": str(tmp_path / "state"),
            "device": device,
            "data": {
                "train": str(tmp_path / "absent.csv"),
                "test": str(tmp_path / "absent.csv"),
                "id_column": "id",
            },
            "tls": {
                "ca": str(tmp_path / "absent.pem"),
                "cert": str(tmp_path / "absent.pem"),
                "key": str(tmp_path / "absent.pem"),
            },
        },
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_party_asking_for_a_missing_accelerator_stops_before_reading_files(
    tmp_path: Path,
) -> None:
    # Prepare: no file it names exists, so reading any would fail with another error
    config = party_config(tmp_path, "cuda")

    # Execute / Assert
    with pytest.raises(ConfigError, match=r"^PARTY\.toml device = 'cuda', but this machine"):
        run_party(config)
    # Assert: the control: on the CPU the same config gets as far as its missing files
    with pytest.raises(ConfigError, match="absent"):
        run_party(party_config(tmp_path, "cpu"))


def test_an_unknown_device_in_party_toml_is_refused_by_name(tmp_path: Path) -> None:
    # Execute / Assert
    with pytest.raises(ConfigError, match="device"):
        party_config(tmp_path, "tpu")
