"""Helpers: tiny sweep files over a small CSV table, and hand-written run directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.test_cli import write_config, write_table
from vfl.experiments.files import Manifest, SettingEntry, write_manifest


def write_sweep(tmp_path: Path, body: str, *, name: str = "tiny") -> Path:
    """A sweep file over ``run.toml`` (a 2-party table run) with ``body`` appended."""
    table = write_table(tmp_path / "credit.csv", rows=120)
    write_config(tmp_path, table)
    path = tmp_path / "sweep.toml"
    head = f'base = "run.toml"\nname = "{name}"\noutput_dir = "{tmp_path / "out"}"\n'
    path.write_text(head + body)
    return path


def record(epoch: int, value: float, *, megabytes: float = 0.0, rounds: int = 0) -> dict[str, Any]:
    """A metrics.jsonl record with ``test_accuracy = value`` and the given traffic."""
    half = int(megabytes * 2**20) // 2
    return {
        "epoch": epoch,
        "round": rounds,
        "train_loss": None if epoch == 0 else 1.0 / (epoch + 1),
        "test_accuracy": value,
        "test_loss": 1.0 - value,
        "bytes_up": half,
        "bytes_down": half,
        "bytes_eval": 0,
        "epoch_train_seconds": 0.1,
        "wall_time": 0.1 * epoch,
    }


def curve_records(values: list[float], *, mb_per_epoch: float = 1.0) -> list[dict[str, Any]]:
    """Records for epochs 0, 1, ... with the given accuracies, 10 rounds per epoch."""
    return [record(e, v, megabytes=mb_per_epoch * e, rounds=10 * e) for e, v in enumerate(values)]


def write_run(run_dir: Path, records: list[dict[str, Any]], *, finished: bool = True) -> Path:
    """A run directory holding ``records`` (and a summary when ``finished``)."""
    run_dir.mkdir(parents=True)
    lines = "".join(json.dumps(r) + "\n" for r in records)
    (run_dir / "metrics.jsonl").write_text(lines)
    if finished:
        (run_dir / "summary.json").write_text("{}\n")
    return run_dir


def write_hand_sweep(
    folder: Path,
    curves: dict[str, list[list[float]]],
    *,
    target: tuple[str, float] | None = None,
) -> Manifest:
    """A sweep folder with one setting per ``curves`` key and one run per curve (seeds 0, 1...)."""
    settings = []
    for index, (label, runs) in enumerate(curves.items()):
        name = f"s{index}"
        entries = tuple((seed, f"{name}__seed{seed}") for seed in range(len(runs)))
        for (_, run_name), values in zip(entries, runs, strict=True):
            write_run(folder / run_name, curve_records(values, mb_per_epoch=index + 1.0))
        settings.append(SettingEntry(label, name, {"train.optimizer.lr": index}, entries))
    manifest = Manifest(
        name="hand",
        metric="test_accuracy",
        log_x=False,
        target=target,
        label_keys=("train.optimizer.lr",),
        settings=tuple(settings),
    )
    write_manifest(folder, manifest)
    return manifest
