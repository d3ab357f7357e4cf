"""Adult (3 parties) and MNIST quadrants: four ways to predict the test split agree to 1e-6.

(a) the in-process model after training (its last evaluation, ``vfl.predict``), (b) ``vfl
predict`` from the exported bundles, (c) a deployed batch prediction: ``vfl launch --predict``,
a server and one process per party over gRPC and mutual TLS, each party reading its own raw
table (Adult columns, or its quadrant's pixels) and encoding it with its own bundle.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.serving.registry_runs import PBM, ROOT, deployment_of, trained_run
from vfl.cli import main
from vfl.results.files import RunDirectory


def launch_predict(run_toml: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "vfl.cli", "launch", str(run_toml), "--predict", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(command, capture_output=True, text=True, timeout=180, env=env)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["adult", "mnist", "adult-pbm"])
def test_simulated_and_deployed_predictions_agree(tmp_path: Path, case: str) -> None:
    # Prepare: a short simulated run; its bundles; the deployment's files
    name, _, variant = case.partition("-")
    run_dir = trained_run(name, tmp_path, *(PBM if variant else ()))
    deployed = deployment_of(run_dir, tmp_path / "deploy")
    out = tmp_path / "deployed.csv"

    # Execute
    assert main(["predict", str(run_dir), "--out", str(tmp_path / "sim.csv")]) == 0
    result = launch_predict(
        deployed.run_toml,
        "--model",
        str(run_dir),
        "--data",
        str(deployed.ids_csv),
        "--out",
        str(out),
    )

    # Assert: every test ID scored, with the same probabilities, and the run's own metrics
    assert result.returncode == 0, result.stderr[-4000:]
    simulated, remote = pd.read_csv(tmp_path / "sim.csv"), pd.read_csv(out)
    assert len(remote) == len(simulated) == 60
    merged = simulated.merge(remote, on="id", suffixes=("_sim", "_dep"))
    probabilities = [c for c in simulated.columns if c.startswith("probability_")]
    for column in probabilities:
        np.testing.assert_allclose(merged[f"{column}_sim"], merged[f"{column}_dep"], atol=1e-6)
    assert (merged["predicted_sim"] == merged["predicted_dep"]).all()
    last = RunDirectory(run_dir).read_metrics()[-1]
    assert f"accuracy {last['test_accuracy']:.4f}" in result.stdout + result.stderr
