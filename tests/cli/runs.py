"""What the command-line tests share: a small run config, and ``vfl`` run as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.test_cli import write_config, write_table
from vfl.cli import main


@dataclass(frozen=True)
class Outcome:
    """What one ``vfl`` command did: its exit status and what it printed."""

    status: int
    out: str
    err: str

    @property
    def error_lines(self) -> list[str]:
        """The non-empty lines it printed on stderr, but for the ``run directory: ...`` line."""
        return [
            line
            for line in self.err.splitlines()
            if line.strip() and not line.startswith("run directory: ")
        ]


def vfl(capsys: pytest.CaptureFixture[str], *args: str) -> Outcome:
    """Run ``vfl ARGS`` in this process; what it printed before is discarded."""
    capsys.readouterr()
    status = main(list(args))
    captured = capsys.readouterr()
    return Outcome(status, captured.out, captured.err)


def vfl_process(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """``vfl ARGS`` as a process of its own, its output captured (any exit status)."""
    return subprocess.run(
        [sys.executable, "-m", "vfl.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def small_config(folder: Path) -> Path:
    """A two-party binary task on a 400-row table: 10 rounds per epoch, 3 epochs, seconds."""
    return write_config(folder, write_table(folder / "credit.csv"))


def metrics(run_dir: Path) -> list[dict[str, Any]]:
    """The records of a run's ``metrics.jsonl``."""
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path, with its bytes."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }
