"""A simulated PBM run says that its seeded noise is reproducible and therefore not private."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.run.variants import VARIANTS, write_run_config
from vfl.cli import main as vfl_main


def test_a_simulated_pbm_run_says_its_noise_is_reproducible_and_not_private(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Prepare
    config = write_run_config(tmp_path)
    sets = [
        a for s in (*VARIANTS["pbm-secure-aggregation"], "train.epochs=1") for a in ("--set", s)
    ]

    # Execute
    with caplog.at_level("WARNING"):
        status = vfl_main(["run", str(config), "--run-dir", str(tmp_path / "run"), *sets])

    # Assert: the summary and the log say so; OS randomness says otherwise (negative control)
    assert status == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["privacy"]["noise"].startswith("seeded: reproducible from train.seed")
    assert "privacy noise: seeded" in caplog.text
    sets += ["--set", "privacy.randomness=os"]
    assert vfl_main(["run", str(config), "--run-dir", str(tmp_path / "os"), *sets]) == 0
    private = json.loads((tmp_path / "os" / "summary.json").read_text())
    assert private["privacy"]["noise"].startswith("os:")
