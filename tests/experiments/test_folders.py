"""A re-run after a config edit keeps every finished run: kept, resumed, extended or moved aside."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from tests.experiments.sweeps import write_sweep
from vfl.config import load_config
from vfl.experiments.folders import plan_folders
from vfl.experiments.plan import PlannedRun, Setting
from vfl.experiments.spec import read_sweep
from vfl.experiments.sweep import run_sweep

CASES = {
    "a": '"train.optimizer.lr" = 0.01',
    "b": '"train.optimizer.lr" = 0.05',
    "d": '"train.epochs" = 1',
    "e": '"train.optimizer.lr" = 0.03',
}
MOVED = re.compile(r"b__seed0\.superseded-\d{8}T\d{6}Z")


def sweep_body(cases: dict[str, str]) -> str:
    head = 'seeds = [0]\nset = { "train.epochs" = 2 }\n'
    return head + "".join(f'[[case]]\nlabel = "{k}"\nset = {{ {v} }}\n' for k, v in cases.items())


def edited_sweep(tmp_path: Path) -> Path:
    """A finished sweep of cases a, b, d, e with the user's notes in every run folder, then
    edited: b's learning rate changed, d's epochs raised, e's summary deleted, case c added."""
    path = write_sweep(tmp_path, sweep_body(CASES))
    spec = read_sweep(path)
    assert not run_sweep(spec, log=io.StringIO()).failed
    for name in CASES:
        (spec.folder / f"{name}__seed0" / "notes.txt").write_text(f"my notes on {name}\n")
    (spec.folder / "e__seed0" / "summary.json").unlink()
    edited = {**CASES, "b": '"train.optimizer.lr" = 0.07', "d": '"train.epochs" = 2'}
    path.write_text(
        path.read_text().split("seeds")[0]
        + sweep_body({**edited, "c": '"train.optimizer.lr" = 0.02'})
    )
    return path


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_dry_run_after_a_config_edit_names_what_happens_to_each_folder(tmp_path: Path) -> None:
    # Prepare
    spec = read_sweep(edited_sweep(tmp_path))
    before = listing(spec.folder)
    log = io.StringIO()

    # Execute
    result = run_sweep(spec, dry_run=True, log=log)

    # Assert
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("sweep tiny: 5 runs (1 keep, 1 resume, 1 extend, 1 move, 1 create)")
    assert lines[1] == "  keep     a__seed0 (finished with this config)"
    moved = (
        rf"  move     b__seed0 -> {MOVED.pattern} \(it holds a run of another config; runs afresh\)"
    )
    assert re.fullmatch(moved, lines[2])
    assert lines[3] == (
        "  extend   d__seed0 (finished with fewer epochs; keeps summary.json as"
        " summary.epochs1.json, checkpoint.pt as checkpoint.epochs1.pt, continues)"
    )
    assert lines[4] == "  resume   e__seed0 (from its checkpoint)"
    assert lines[5] == "  create   c__seed0"
    assert result.states == {
        "a__seed0": "done",
        "b__seed0": "superseded",
        "d__seed0": "partial",
        "e__seed0": "partial",
        "c__seed0": "new",
    }
    assert listing(spec.folder) == before  # a dry run changes nothing


def test_a_rerun_after_a_config_edit_moves_the_old_run_aside_with_the_users_files(
    tmp_path: Path,
) -> None:
    # Prepare
    spec = read_sweep(edited_sweep(tmp_path))
    old_config = (spec.folder / "b__seed0" / "config.toml").read_text()

    # Execute
    result = run_sweep(spec, log=io.StringIO())

    # Assert
    moved = spec.folder / result.actions["b__seed0"].renames[0][1]
    assert MOVED.fullmatch(moved.name)
    assert (moved / "notes.txt").read_text() == "my notes on b\n"
    assert (moved / "config.toml").read_text() == old_config and (moved / "summary.json").exists()
    assert "lr = 0.07" in (spec.folder / "b__seed0" / "config.toml").read_text()
    for name in ("a", "d", "e"):  # kept, extended, resumed
        assert (spec.folder / f"{name}__seed0" / "notes.txt").read_text() == f"my notes on {name}\n"
    assert all((spec.folder / f"{name}__seed0" / "summary.json").exists() for name in "abcde")
    extended = spec.folder / "d__seed0"
    assert (extended / "summary.epochs1.json").exists()
    assert (extended / "checkpoint.epochs1.pt").stat().st_size > 0
    records = (extended / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["epoch"] for line in records] == [0, 1, 2]
    assert sorted(o.name for o in result.outcomes) == [
        "b__seed0",
        "c__seed0",
        "d__seed0",
        "e__seed0",
    ]
    assert not result.failed


def test_two_moves_in_one_second_get_distinct_names(tmp_path: Path) -> None:
    # Prepare: a folder of another run, and an earlier move aside at the same second
    now = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    (tmp_path / "x__seed0").mkdir()
    (tmp_path / "x__seed0" / "notes.txt").write_text("mine\n")
    (tmp_path / "x__seed0.superseded-20250102T030405Z").mkdir()
    run = PlannedRun(Setting("x", "x", ()), 0, "x__seed0", load_config(None, []))

    # Execute
    action = plan_folders(tmp_path, [run], now=now)["x__seed0"]
    action.apply(tmp_path)

    # Assert
    assert action.renames == (("x__seed0", "x__seed0.superseded-20250102T030405Z-2"),)
    assert (tmp_path / "x__seed0.superseded-20250102T030405Z-2" / "notes.txt").exists()
    assert not (tmp_path / "x__seed0").exists()


def test_a_failed_start_is_retried_in_its_folder_without_moving_it_aside(tmp_path: Path) -> None:
    # Prepare: a case whose table does not exist fails before it writes anything but error.txt
    body = 'set = { "train.epochs" = 1 }\n[[case]]\nlabel = "good"\n'
    body += '[[case]]\nlabel = "gone"\nset = { "data.path" = "no-such.csv" }\n'
    spec = read_sweep(write_sweep(tmp_path, body))
    run_sweep(spec, log=io.StringIO())
    log = io.StringIO()

    # Execute
    dry = run_sweep(spec, dry_run=True, log=log)
    again = run_sweep(spec, log=io.StringIO())

    # Assert
    assert dry.states == {"good__seed0": "done", "gone__seed0": "new"}
    assert "  create   gone__seed0 (replaces the error.txt of a start that failed before" in (
        log.getvalue()
    )
    assert [o.name for o in again.failed] == ["gone__seed0"]
    assert sorted(p.name for p in spec.folder.iterdir() if p.is_dir()) == [
        "gone__seed0",
        "good__seed0",
    ]
    assert "no-such.csv" in (spec.folder / "gone__seed0" / "error.txt").read_text()


def vfl_process(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vfl.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def interrupted_run(tmp_path: Path) -> tuple[Path, Path, str]:
    """A sweep of one run that was stopped before its summary: the sweep file, the run's
    metrics.jsonl and its text."""
    path = write_sweep(tmp_path, sweep_body({"a": CASES["a"]}))
    spec = read_sweep(path)
    assert not run_sweep(spec, log=io.StringIO()).failed
    run = spec.folder / "a__seed0"
    (run / "summary.json").unlink()
    metrics = run / "metrics.jsonl"
    return path, metrics, metrics.read_text()


def test_a_run_whose_only_damage_is_a_torn_last_metrics_line_is_continued(tmp_path: Path) -> None:
    # Prepare: a kill while the run wrote a record left its last line cut short
    path, metrics, whole = interrupted_run(tmp_path)
    metrics.write_text(whole + '{"epoch": 3, "round": 9')

    # Execute
    result = vfl_process("sweep", str(path))

    # Assert: resumed as `vfl run --resume` would, the cut line dropped after a copy was kept
    assert result.returncode == 0, result.stderr
    assert "(0 keep, 1 resume, 0 extend, 0 move, 0 create)" in result.stderr + result.stdout
    assert not list(metrics.parent.parent.glob("*.superseded-*"))
    assert metrics.read_text() == whole
    (copy,) = metrics.parent.glob("metrics.jsonl.resumed-*")
    assert copy.read_text() == whole + '{"epoch": 3, "round": 9'


def test_a_run_damaged_before_its_last_metrics_line_is_moved_aside_saying_so(
    tmp_path: Path,
) -> None:
    # Prepare: the negative control: the cut line is not the last one
    path, metrics, whole = interrupted_run(tmp_path)
    metrics.write_text('{"epoch": 0, "rou\n' + whole)

    # Execute
    result = vfl_process("sweep", str(path), "--dry-run")

    # Assert
    assert result.returncode == 0, result.stderr
    assert "its metrics.jsonl is damaged before its last line; runs afresh" in (
        result.stderr + result.stdout
    )
