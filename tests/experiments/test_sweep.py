"""Running sweeps for real on a tiny table: resumability, failures, parallel workers, the CLI."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.experiments.sweeps import write_sweep
from vfl.errors import ConfigError
from vfl.experiments.cli import register
from vfl.experiments.spec import read_sweep
from vfl.experiments.sweep import run_sweep

TWO_RUNS = """
seeds = [0]
set = { "train.epochs" = 2 }
[grid]
"train.optimizer.lr" = [0.01, 0.05]
[target]
metric = "test_accuracy"
value = 0.6
"""
RUNS = ("lr=0.01__seed0", "lr=0.05__seed0")


def vfl(argv: Sequence[str]) -> int:
    """``vfl sweep`` / ``vfl plot`` as the main CLI dispatches them."""
    parser = argparse.ArgumentParser(prog="vfl")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status: int = args.handler(args)
    return status


def epochs_of(run_dir: Path) -> list[int]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["epoch"] for line in lines]


def test_a_finished_sweep_is_skipped_and_a_missing_summary_reruns_only_that_run(
    tmp_path: Path,
) -> None:
    # Prepare
    spec = read_sweep(write_sweep(tmp_path, TWO_RUNS))
    first = run_sweep(spec, log=io.StringIO())
    summaries = {name: spec.folder / name / "summary.json" for name in RUNS}
    stamps = {name: path.stat().st_mtime_ns for name, path in summaries.items()}

    # Execute
    second = run_sweep(spec, log=io.StringIO())
    unchanged = {name: path.stat().st_mtime_ns for name, path in summaries.items()} == stamps
    summaries[RUNS[1]].unlink()
    third = run_sweep(spec, log=io.StringIO())

    # Assert
    assert [o.name for o in first.outcomes if o.ok] == list(RUNS)
    assert second.states == dict.fromkeys(RUNS, "done") and second.outcomes == ()
    assert unchanged
    assert third.states == {RUNS[0]: "done", RUNS[1]: "partial"}
    assert [o.name for o in third.outcomes] == [RUNS[1]]
    assert epochs_of(spec.folder / RUNS[1]) == [0, 1, 2]  # resumed, not appended twice
    assert (spec.folder / "table.md").exists() and (spec.folder / "sweep.json").exists()


def test_more_epochs_extend_finished_runs_and_a_new_config_starts_afresh(tmp_path: Path) -> None:
    # Prepare
    path = write_sweep(tmp_path, TWO_RUNS)
    folder = read_sweep(path).folder
    run_sweep(read_sweep(path), log=io.StringIO())
    path.write_text(path.read_text().replace('"train.epochs" = 2', '"train.epochs" = 3'))
    (folder / RUNS[1] / "checkpoint.pt").unlink()

    # Execute
    result = run_sweep(read_sweep(path), log=io.StringIO())

    # Assert
    assert result.states == {RUNS[0]: "partial", RUNS[1]: "superseded"}
    assert epochs_of(folder / RUNS[0]) == epochs_of(folder / RUNS[1]) == [0, 1, 2, 3]
    (moved,) = folder.glob(f"{RUNS[1]}.superseded-*")
    assert epochs_of(moved) == [0, 1, 2]  # the finished 2-epoch run, moved aside


def test_dry_run_lists_states_and_runs_nothing(tmp_path: Path) -> None:
    # Prepare
    spec = read_sweep(write_sweep(tmp_path, TWO_RUNS))
    log = io.StringIO()

    # Execute
    result = run_sweep(spec, dry_run=True, log=log)

    # Assert
    assert result.states == dict.fromkeys(RUNS, "new")
    assert f"create   {RUNS[0]}" in log.getvalue()
    assert not spec.folder.exists()


def test_an_invalid_setting_stops_the_sweep_before_any_run(tmp_path: Path) -> None:
    # Prepare
    spec = read_sweep(write_sweep(tmp_path, '[grid]\n"train.batch_size" = [16, -1]\n'))

    # Execute
    with pytest.raises(ConfigError, match="setting 'batch_size=-1'"):
        run_sweep(spec, log=io.StringIO())

    # Assert
    assert not spec.folder.exists()


def test_parallel_workers_survive_a_failing_run(tmp_path: Path) -> None:
    # Prepare: a case whose table does not exist fails inside its worker
    body = 'workers = 2\nset = { "train.epochs" = 1 }\n[[case]]\nlabel = "good"\n'
    body += '[[case]]\nlabel = "missing data"\nset = { "data.path" = "no-such.csv" }\n'
    path = write_sweep(tmp_path, body)
    folder = read_sweep(path).folder

    # Execute
    status = vfl(["sweep", str(path)])

    # Assert
    assert status == 4  # some requested work failed
    assert (folder / "good__seed0" / "summary.json").exists()
    error = (folder / "missing-data__seed0" / "error.txt").read_text()
    assert "DataError" in error and "no-such.csv" in error
    assert "| good | 1 |" in (folder / "table.md").read_text()


SCRIPT = """from pathlib import Path
from vfl.experiments import read_sweep, run_sweep
{call}
"""


@pytest.mark.parametrize("guarded", [False, True], ids=["top-level", "guarded"])
def test_a_script_calling_run_sweep_with_workers_is_told_to_guard_it(
    tmp_path: Path, guarded: bool
) -> None:
    # Prepare: the docs' "From Python" script, without and (the negative control) with the guard
    path = write_sweep(tmp_path, TWO_RUNS)
    call = f"result = run_sweep(read_sweep(Path({str(path)!r})), workers=2)"
    call = f'if __name__ == "__main__":\n    {call}' if guarded else call
    script = tmp_path / "my_sweep.py"
    script.write_text(SCRIPT.format(call=call))

    # Execute
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False
    )

    # Assert: the workers stop at their start with the fix, before planning the sweep again
    folder = read_sweep(path).folder
    if guarded:
        assert "stopped at its start" not in done.stderr
        assert all((folder / run / "summary.json").exists() for run in RUNS)
    else:
        # each worker the pool started says it (the pool breaks when the first ends, so under
        # load the second may never start)
        assert 1 <= done.stderr.count('Call it under `if __name__ == "__main__":`') <= 2
        assert done.stderr.count("sweep tiny: 2 runs") == 1  # planned once, by the script
        assert "WorkerEnded: a worker process ended abruptly" in done.stderr
        assert "Traceback" not in done.stderr


def test_vfl_plot_redraws_a_sweep_and_one_of_its_runs(tmp_path: Path) -> None:
    # Prepare
    path = write_sweep(tmp_path, TWO_RUNS)
    assert vfl(["sweep", str(path), "--workers", "1"]) == 0
    folder = read_sweep(path).folder
    for png in folder.glob("*.png"):
        png.unlink()

    # Execute
    sweep_status = vfl(["plot", str(folder), "--metric", "test_auc", "--log-x"])
    run_status = vfl(["plot", str(folder / RUNS[0])])

    # Assert
    assert sweep_status == run_status == 0
    assert (folder / "test_auc_vs_mb.png").stat().st_size > 0
    assert "| lr=0.05 | 1 |" in (folder / "table_test_auc.md").read_text()
    assert (folder / RUNS[0] / "test_accuracy_vs_epoch.png").stat().st_size > 0
