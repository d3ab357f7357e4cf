"""``vfl sweep`` as a user runs it: its final line, ``--json``, and a stop by a signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.experiments.sweeps import write_sweep

ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
VFL = [sys.executable, "-m", "vfl.cli"]
ONE_RUN = 'seeds = [0]\nset = { "train.epochs" = 1 }\n'


def test_sweep_prints_a_line_per_run_on_stderr_and_one_final_line(tmp_path: Path) -> None:
    # Prepare
    path = write_sweep(tmp_path, ONE_RUN)

    # Execute
    done = subprocess.run([*VFL, "sweep", str(path)], capture_output=True, text=True, env=ENV)

    # Assert
    assert done.returncode == 0, done.stderr
    assert "[1/1] ok     run__seed0 (" in done.stderr
    folder = tmp_path / "out" / "tiny"
    assert done.stdout == f"sweep tiny: 1 runs, 1 ok; tables and plots in {folder}\n"


def test_sweep_json_and_quiet_print_only_the_result(tmp_path: Path) -> None:
    # Prepare
    path = write_sweep(tmp_path, ONE_RUN)

    # Execute
    done = subprocess.run(
        [*VFL, "sweep", str(path), "--quiet", "--json"], capture_output=True, text=True, env=ENV
    )

    # Assert
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    result = json.loads(done.stdout)
    assert [o["name"] for o in result["outcomes"]] == ["run__seed0"]
    assert result["outcomes"][0]["ok"] and "test_accuracy" in result["outcomes"][0]["final"]
    assert str(tmp_path / "out" / "tiny" / "table.md") in result["reports"]


@pytest.mark.parametrize(
    "number", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.slow)]
)
def test_a_signal_stops_a_sweep_s_runs_after_a_round_and_names_the_command(
    tmp_path: Path, number: signal.Signals
) -> None:
    # Prepare: two long runs in two worker processes
    body = 'seeds = [0, 1]\nworkers = 2\nset = { "train.epochs" = 500, "train.batch_size" = 8 }\n'
    path = write_sweep(tmp_path, body)
    folder = tmp_path / "out" / "tiny"
    runs = [folder / f"run__seed{seed}" for seed in (0, 1)]
    sweep = subprocess.Popen(
        [*VFL, "sweep", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        start_new_session=True,  # its own process group, as a shell's job
    )
    deadline = time.monotonic() + 180
    while not all((run / "checkpoint.pt").exists() for run in runs):
        assert time.monotonic() < deadline and sweep.poll() is None
        time.sleep(0.2)

    # Execute: SIGTERM to the sweep alone; Ctrl-C to its whole process group, as a terminal does
    if number == signal.SIGTERM:
        sweep.send_signal(number)
    else:
        os.killpg(sweep.pid, number)
    out, err = sweep.communicate(timeout=180)

    # Assert: every run stopped after a round with its checkpoint; the message says how to go on
    assert sweep.returncode == 128 + number, err
    assert err.count("STOPPED run__seed") == 2, err
    assert err.strip().splitlines()[-1] == (
        f"vfl: stopped by {number.name}: 0 of 2 runs finished (in {folder}); 2 stopped after a"
        f" round with a checkpoint; continue with `vfl sweep {path}` (it skips finished runs and"
        " resumes the others)"
    )
    assert out == ""
    for run in runs:
        assert "stopped by " + number.name in (run / "error.txt").read_text()
        assert (run / "checkpoint.pt").exists() and not (run / "summary.json").exists()
    stamps = [(run / "checkpoint.pt").stat().st_mtime_ns for run in runs]
    time.sleep(2)
    assert stamps == [(run / "checkpoint.pt").stat().st_mtime_ns for run in runs]  # no orphan
