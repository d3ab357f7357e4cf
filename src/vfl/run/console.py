"""The lines the training commands print: each epoch's, the untrained model's, the final one.

``show_result`` puts a command's result on standard output (the final line, or the summary as
JSON); everything else a command shows goes to standard error through ``vfl.run.progress``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

_FORKED_FROM: list[float] = []
"""``time.monotonic()`` at the start of the process this one was forked from, if it was."""


def count_age_from(started: float) -> None:
    """Count ``process_age`` from ``started``, a ``time.monotonic()`` of the parent's start.

    A forked process's work began in its parent (``vfl launch`` imports torch once for all).
    """
    _FORKED_FROM[:] = [started]


def process_age() -> float:
    """Seconds since this process started (Linux's ``/proc``; elsewhere 0).

    For a process forked by ``vfl launch``: since the launch started (``count_age_from``).
    """
    if _FORKED_FROM:
        return max(0.0, time.monotonic() - _FORKED_FROM[0])
    return own_age()


def forked_by_launch() -> bool:
    """Whether ``vfl launch`` forked this process (``process_age`` counts from the launch)."""
    return bool(_FORKED_FROM)


def own_age() -> float:
    """Seconds since this process itself started (its fork, for a forked one)."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            started_ticks = int(stat.read().rpartition(")")[2].split()[19])
            since_boot = float(uptime.read().split()[0])
        return max(0.0, since_boot - started_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def describe_untrained(record: dict[str, Any], seconds: float) -> str:
    """``untrained model | test_loss 0.69 | ... | evaluated in 1.2 s`` (the epoch 0 record)."""
    parts = [f"{k} {v:.4f}" for k, v in record.items() if k.startswith("test_")]
    return " | ".join(["untrained model", *parts, f"evaluated in {seconds:.1f} s"])


def describe(record: dict[str, Any], wall_s: float | None = None) -> str:
    """One line for an epoch's metrics record.

    ``epoch 3 | train_loss 0.41 | ... | train_traffic 1.0 MiB | 0.6 s (training 0.2 s)``: the
    epoch's wall time (``wall_s``: training, evaluation, checkpoint) and its training time. An
    epoch resumed part way says ``0.1 s since the resume (training 0.3 s in all)``: its training
    time counts the rounds before the stop too.
    """
    parts = [f"epoch {record['epoch']}"]
    if record["train_loss"] is not None:
        parts.append(f"train_loss {record['train_loss']:.4f}")
    parts += [f"{k} {v:.4f}" for k, v in record.items() if k.startswith("test_")]
    if "bytes_up" in record:
        megabytes = (record["bytes_up"] + record["bytes_down"]) / 2**20
        parts.append(f"train_traffic {megabytes:.1f} MiB")
    if "epsilon" in record:
        parts.append(f"epsilon {record['epsilon']:.3g}")
    training = f"{record['epoch_train_seconds']:.1f} s"
    if wall_s is None:
        parts.append(training)
    elif wall_s < record["epoch_train_seconds"]:  # the epoch began before a resume
        parts.append(f"{wall_s:.1f} s since the resume (training {training} in all)")
    else:
        parts.append(f"{wall_s:.1f} s (training {training})")
    return " | ".join(parts)


def final_line(summary: dict[str, Any], run_dir: Path) -> str:
    """``final: test_loss 0.41, test_accuracy 0.87, ... (results in RUN_DIR)``."""
    final = ", ".join(
        f"{key} {value:.4f}"
        for key, value in summary["final"].items()
        if key.startswith(("test_", "attack_"))
        and not key.endswith("_sign")
        and isinstance(value, int | float)
    )
    return f"final: {final} (results in {run_dir})"


def show_result(summary: dict[str, Any], run_dir: Path, *, as_json: bool, quiet: bool) -> None:
    """A trained run's result on standard output: the summary as JSON, or the final line.

    With ``as_json`` the final line goes to standard error as well, unless ``quiet``.
    """
    line = final_line(summary, run_dir)
    if as_json:
        print(json.dumps(summary, indent=2))
        if not quiet:
            print(line, file=sys.stderr)
    else:
        print(line)
