"""Final accuracy, bottom-model compute and uploaded bytes per setting of an LVFL sweep.

Reads each finished run's ``summary.json`` (``final``, ``compute.train_flops``, ``bytes``) and
prints a Markdown table with mean ± population std over seeds and the change against a reference
setting (default ``NL``):

    .venv/bin/python experiments/lvfl/compare.py runs/sweeps/lvfl-fig2 [--reference NL]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

MB = 2**20


def load(sweep: Path) -> dict[str, list[dict[str, Any]]]:
    """Finished runs' summaries by setting label, in the sweep's order."""
    manifest = json.loads((sweep / "sweep.json").read_text())
    runs: dict[str, list[dict[str, Any]]] = {}
    for setting in manifest["settings"]:
        summaries = []
        for run in setting["runs"]:
            path = sweep / run["dir"] / "summary.json"
            if path.exists():
                summaries.append(json.loads(path.read_text()))
        runs[setting["label"]] = summaries
    return runs


def columns(summary: dict[str, Any]) -> dict[str, float]:
    """The per-run figures the table reduces."""
    return {
        "accuracy": 100 * summary["final"]["test_accuracy"],
        "gflops": summary["compute"]["train_flops"] / 1e9,
        "compute_s": summary["compute"]["compute_seconds"],
        "upload_mb": summary["bytes"]["train_up"] / MB,
        "traffic_mb": summary["bytes"]["train_total"] / MB,
    }


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and population std."""
    return statistics.fmean(values), statistics.pstdev(values)


def table(runs: dict[str, list[dict[str, Any]]], reference: str) -> str:
    """The Markdown table."""
    means: dict[str, dict[str, tuple[float, float]]] = {}
    for label, summaries in runs.items():
        if summaries:
            per_run = [columns(s) for s in summaries]
            means[label] = {k: mean_std([r[k] for r in per_run]) for k in per_run[0]}
    base = means.get(reference)
    lines = [
        "| setting | seeds | final test accuracy (%) | bottom-model training GFLOPs"
        " | measured party compute (s) | uploaded MB | traffic up + down MB |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, stats in means.items():
        cells = [f"{stats['accuracy'][0]:.2f} ± {stats['accuracy'][1]:.2f}"]
        for key in ("gflops", "compute_s", "upload_mb", "traffic_mb"):
            value, spread = stats[key]
            cell = f"{value:.1f} ± {spread:.1f}"
            if base is not None and label != reference:
                cell += f" ({100 * (value / base[key][0] - 1):+.1f}%)"
            cells.append(cell)
        if base is not None and label != reference:
            gap = stats["accuracy"][0] - base["accuracy"][0]
            cells[0] += f" ({gap:+.2f} pt)"
        lines.append(f"| {label} | {len(runs[label])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    """Print the table of one sweep folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path, help="sweep folder (holds sweep.json)")
    parser.add_argument("--reference", default="NL", help="setting the changes are against")
    args = parser.parse_args()
    print(table(load(args.sweep), args.reference))


if __name__ == "__main__":
    main()
