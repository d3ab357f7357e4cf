"""A compressor, an attack and a data set registered outside the package run as users run them.

Each test registers its toy (one line in its module, ``tests/extensions``) and runs the ``vfl``
command through its entry point, ``vfl.cli.main``, in this process: a registration lives in the
process that made it, and vfl has no plug-in loader that a separate ``vfl`` process would use
to import a test module. Nothing else is edited: the config accepts the new name, the run builds
it, and (for the attack) the harness checks its isolation.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.extensions.peeking_attack import peeking_attack_registered
from tests.extensions.toy_attack import toy_attack_registered
from tests.extensions.toy_compressor import sign_compressor_registered
from tests.extensions.toy_dataset import toy_dataset_registered, write_blobs
from tests.run.variants import write_run_config
from vfl.cli import main


def _sets(*pairs: str) -> list[str]:
    return [word for pair in pairs for word in ("--set", pair)]


def test_the_toy_attack_runs_through_vfl_attack(tmp_path: Path) -> None:
    # Prepare
    config, run_dir = write_run_config(tmp_path), tmp_path / "run"

    # Execute
    with toy_attack_registered() as entry:
        status = main(
            [
                *("attack", str(config), "--run-dir", str(run_dir), "--quiet"),
                *_sets(f"attack.name={entry.name}", "attack.party=2", "train.epochs=2"),
            ]
        )

    # Assert
    assert status == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["attack"]["name"] == "toy_spread"
    assert 0.5 <= summary["attack"]["metrics"]["attack_spread_auc"] <= 1.0
    last = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert "attack_spread_auc" in last


def test_an_attack_module_that_imports_past_its_role_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: the same attack, from a module that also imports a role (the negative control)
    config, run_dir = write_run_config(tmp_path), tmp_path / "run"

    # Execute
    with peeking_attack_registered() as entry:
        status = main(
            [
                *("attack", str(config), "--run-dir", str(run_dir), "--quiet"),
                *_sets(f"attack.name={entry.name}", "attack.party=2"),
            ]
        )

    # Assert
    assert status == 2
    error = capsys.readouterr().err
    assert "tests.extensions.peeking_attack" in error
    assert "imports 'vfl.roles.party'" in error


def test_the_toy_compressor_runs_through_vfl_run(tmp_path: Path) -> None:
    # Prepare
    config, run_dir = write_run_config(tmp_path), tmp_path / "run"
    plain_dir = tmp_path / "plain"

    # Execute
    with sign_compressor_registered() as compressor:
        status = main(
            [
                *("run", str(config), "--run-dir", str(run_dir), "--quiet"),
                *_sets("train.epochs=1", f"compress.embedding.name={compressor.name}"),
                *_sets("compress.embedding.bits=1"),
            ]
        )
    main(["run", str(config), "--run-dir", str(plain_dir), "--quiet", "--set", "train.epochs=1"])

    # Assert: one bit per component and a float32 scale per message, against 32 bits uncompressed
    assert status == 0
    assert 'name = "toy_sign"' in (run_dir / "config.toml").read_text()
    sent = json.loads((run_dir / "summary.json").read_text())
    plain = json.loads((plain_dir / "summary.json").read_text())
    assert sent["accounting"]["bits_per_component"] == 1
    assert plain["accounting"]["bits_per_component"] == 32
    assert 10 * sent["bytes"]["train_up"] < plain["bytes"]["train_up"]


def test_the_toy_data_set_runs_through_vfl_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    folder, run_dir = write_blobs(tmp_path / "blobs"), tmp_path / "run"
    config = tmp_path / "run.toml"
    config.write_text(f'[data]\nname = "toy_blobs"\npath = "{folder}"\n')

    # Execute
    with toy_dataset_registered():
        listed = main(["data", "list"])
        listing = capsys.readouterr().out
        status = main(
            [
                *("run", str(config), "--run-dir", str(run_dir), "--quiet"),
                *_sets("partition.scheme=contiguous", "partition.num_parties=2"),
                *_sets("train.epochs=2"),
                *_sets("model.bottom.hidden=[8]", "train.batch_size=30"),
            ]
        )

    # Assert: listed, trained, and far above chance on well separated blobs
    assert listed == 0
    assert "toy_blobs" in listing
    assert status == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["final"]["test_accuracy"] > 0.9
