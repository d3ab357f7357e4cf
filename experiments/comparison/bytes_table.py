"""The two-party MNIST top/bottom comparison before and after compact batch ids (issue 15).

.venv/bin/python experiments/comparison/bytes_table.py [experiments/comparison/results]

``results/before`` and ``results/after`` hold each run's ``summary.json`` and ``metrics.jsonl``
from ``vfl sweep experiments/comparison/mnist_top_bottom.toml``, run at the commit before the
ids were bit-packed and after it. Prints training bytes per epoch and to 0.97 test accuracy.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
SETTINGS = ("FedSGD", "FedBCD-Q=5", "FedSGD,lattice-b=4", "FedBCD-Q=5,lattice-b=4")
MB = 2**20


def runs(folder: Path, setting: str) -> list[dict[str, Any]]:
    """The summaries of one setting's runs (one per seed) under ``folder``."""
    summaries = sorted(folder.glob(f"{setting}__seed*/summary.json"))
    return [json.loads(path.read_text()) for path in summaries]


def per_epoch(summary: dict[str, Any]) -> float:
    """Training bytes per epoch of one run."""
    return float(summary["bytes"]["train_total"]) / float(summary["epochs"])


def to_target(summary: dict[str, Any]) -> float:
    """Bytes sent until the run first reached its target accuracy."""
    return float(summary["target"]["reached"]["bytes"])


def mean(values: list[float]) -> str:
    """The mean of byte counts, in MiB with two decimals."""
    return f"{statistics.fmean(values) / MB:.2f}"


def main() -> None:
    """Print the before/after table as Markdown."""
    base = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "results"
    print("| setting | MB per epoch, before | after | MB to 0.97, before | after | saved |")
    print("|---|---|---|---|---|---|")
    for setting in SETTINGS:
        before, after = runs(base / "before", setting), runs(base / "after", setting)
        epoch_before = [per_epoch(s) for s in before]
        epoch_after = [per_epoch(s) for s in after]
        saved = 1 - statistics.fmean(epoch_after) / statistics.fmean(epoch_before)
        print(
            f"| {setting} | {mean(epoch_before)} | {mean(epoch_after)} |"
            f" {mean([to_target(s) for s in before])} | {mean([to_target(s) for s in after])} |"
            f" {saved:.1%} |"
        )


if __name__ == "__main__":
    main()
