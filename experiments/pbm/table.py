"""Final and best test accuracy with the accountant's epsilon per setting of a VFL-PBM sweep.

Reads each finished run's ``summary.json`` and prints a Markdown table (mean ± population std
over seeds; epsilon at the run's delta, identical across seeds):

    .venv/bin/python experiments/pbm/table.py runs/sweeps/pbm-fashion-mnist-quadrants
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def table(sweep: Path) -> str:
    """The Markdown table of one sweep folder."""
    manifest = json.loads((sweep / "sweep.json").read_text())
    lines = [
        "| setting | seeds | final test accuracy (%) | best test accuracy (%) | ε at δ |",
        "|---|---|---|---|---|",
    ]
    for setting in manifest["settings"]:
        final, best, epsilon = [], [], []
        for run in setting["runs"]:
            path = sweep / run["dir"] / "summary.json"
            if not path.exists():
                continue
            summary = json.loads(path.read_text())
            final.append(100 * summary["final"]["test_accuracy"])
            best.append(100 * summary["best"]["test_accuracy"]["value"])
            if "privacy" in summary:
                epsilon.append(summary["privacy"]["epsilon"])
        if not final:
            lines.append(f"| {setting['label']} | 0 | – | – | – |")
            continue
        eps = f"{statistics.fmean(epsilon):.3g}" if epsilon else "– (no privacy)"
        lines.append(
            f"| {setting['label']} | {len(final)} | {statistics.fmean(final):.2f} ±"
            f" {statistics.pstdev(final):.2f} | {statistics.fmean(best):.2f} ±"
            f" {statistics.pstdev(best):.2f} | {eps} |"
        )
    return "\n".join(lines)


def main() -> None:
    """Print the table of one sweep folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path, help="sweep folder (holds sweep.json)")
    print(table(parser.parse_args().sweep))


if __name__ == "__main__":
    main()
