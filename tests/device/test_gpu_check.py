"""``bench/gpu_check.py --device cpu`` runs anywhere: the short form CI runs of the GPU check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench/gpu_check.py"


def test_the_gpu_check_runs_on_the_cpu_and_writes_its_table_and_results(tmp_path: Path) -> None:
    # Prepare
    out = tmp_path / "out"
    only = "centralized,split-learning,predict-on-cpu"
    command = [sys.executable, str(SCRIPT), "--device", "cpu", "--size", "tiny", "--out", str(out)]
    command += ["--parts", "paths,life,speed", "--only", only]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}

    # Execute
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)

    # Assert
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads((out / "gpu_check.json").read_text())
    rows = {row["name"]: row for row in result["checks"]}
    assert set(rows) == set(only.split(","))
    assert all("error" not in row and 0 <= row["accuracy"] <= 1 for row in rows.values())
    (speed,) = result["speed"]
    assert speed["ratio_vfl_over_centralized"] > 0 and speed["batch_size"] == 32
    table = (out / "table.md").read_text()
    assert "| paths | split-learning | cpu |" in table and table in done.stdout


def test_an_unknown_check_is_refused_by_name(tmp_path: Path) -> None:
    # Execute
    command = [sys.executable, str(SCRIPT), "--device", "cpu", "--out", str(tmp_path)]
    done = subprocess.run([*command, "--only", "warp-drive"], capture_output=True, text=True)

    # Assert
    assert done.returncode == 2
    assert "--only: unknown ['warp-drive']" in done.stderr
    assert not (tmp_path / "gpu_check.json").exists()
