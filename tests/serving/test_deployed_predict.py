"""Deployed batch prediction: real processes over gRPC and mutual TLS, bundles of a real run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.deploy.scenario import ROOT, Scenario
from tests.serving.deployed import gathered_bundles, joined_test_table, trained_deployment
from vfl.cli import main
from vfl.run.bundles import BUNDLE, SERVER, party_folder

pytestmark = pytest.mark.slow  # a deployed training and a deployed prediction: about 40 s


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    return trained_deployment(tmp_path_factory.mktemp("trained"))


def predict_deployed(scenario: Scenario, out: Path, *extra: str) -> pd.DataFrame:
    data = scenario.root / "holder0-test.csv"
    args = ["--predict", "--model", str(scenario.run_dir), "--data", str(data), "--out", str(out)]
    result = run_launch_predict(scenario, *args, *extra)
    assert result.returncode == 0, result.stderr[-4000:]
    return pd.read_csv(out)


def run_launch_predict(scenario: Scenario, *args: str) -> subprocess.CompletedProcess[str]:
    """``vfl launch RUN.toml ARGS`` of the scenario; output captured."""
    command = [sys.executable, "-m", "vfl.cli", "launch", str(scenario.run_toml), *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, env=env, cwd=scenario.root
    )


def test_every_role_exports_its_own_bundle(deployment: Scenario) -> None:
    # Assert
    assert (deployment.run_dir / BUNDLE / SERVER / "manifest.json").is_file()
    for party in deployment.party_tomls:
        folder = deployment.state_dir(party) / BUNDLE / party_folder(party)
        assert (folder / "manifest.json").is_file()
        assert not (deployment.run_dir / BUNDLE / party_folder(party)).exists()


def test_deployed_batch_prediction_equals_the_bundles_in_one_process(
    deployment: Scenario, tmp_path: Path
) -> None:
    # Prepare: the same bundles gathered in one folder; the rows every holder has, joined
    folder = gathered_bundles(deployment, tmp_path / "model")
    joined = joined_test_table(deployment)
    joined.to_csv(tmp_path / "joined.csv", index=False)

    # Execute: (b) vfl predict in one process, (c) vfl launch --predict over gRPC
    assert main(["predict", str(folder), "--data", str(tmp_path / "joined.csv")]) == 0
    simulated = pd.read_csv(folder / "predictions.csv")
    deployed = predict_deployed(deployment, tmp_path / "deployed.csv")

    # Assert: the same IDs (the PSI intersection) and the same probabilities
    assert sorted(deployed["id"]) == sorted(deployment.common_ids("test"))
    merged = simulated.merge(deployed, on="id", suffixes=("_sim", "_dep"))
    assert len(merged) == len(deployed) == len(simulated)
    for name in ("no", "yes"):
        column = f"probability_{name}"
        np.testing.assert_allclose(merged[f"{column}_sim"], merged[f"{column}_dep"], atol=1e-6)
    assert (merged["predicted_sim"] == merged["predicted_dep"]).all()
