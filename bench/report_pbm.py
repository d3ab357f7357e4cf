"""Table of ``bench_pbm.py`` runs of several code versions: medians over alternating runs.

    .venv/bin/python bench/report_pbm.py [FOLDER] [--sides before,after]

The folder holds ``<side>_<i>.json`` for each side, each the output of ``bench_pbm.py
--repeats 1``, run alternately (side 1, side 2, ..., side 1, ...) on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent


def runs(folder: Path, side: str) -> list[dict[str, Any]]:
    """The results of one side, in run order."""
    return [json.loads(p.read_text()) for p in sorted(folder.glob(f"{side}_*.json"))]


def median(results: list[dict[str, Any]], parties: str, key: str) -> float | None:
    """The median of ``key`` for ``parties`` (``"M=4"``) over ``results``; None if unrecorded."""
    values = [r[parties][key] for r in results if key in r[parties]]
    return float(statistics.median(values)) if values else None


def cell(value: float | None, pattern: str) -> str:
    """``value`` formatted, or a dash where the runs did not record it."""
    return "-" if value is None else format(value, pattern)


def main() -> None:
    """Print the Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=ROOT / "results/pbm_issue14")
    parser.add_argument("--sides", default="before,after")
    args = parser.parse_args()
    sides = {side: runs(args.folder, side) for side in args.sides.split(",")}
    print(
        "| parties | code | round (ms) | round CPU (ms) | PBM + masking (ms) | share of the round |"
    )
    print("|---|---|---|---|---|---|")
    for parties in ("M=4", "M=16"):
        for side, results in sides.items():
            row = [
                cell(median(results, parties, "round_ms"), ".2f"),
                cell(median(results, parties, "round_cpu_ms"), ".2f"),
                cell(median(results, parties, "pbm_and_masking_ms"), ".2f"),
                cell(median(results, parties, "fraction"), ".1%"),
            ]
            print(f"| {parties} | {side} | {' | '.join(row)} |")
    counts = " + ".join(str(len(r)) for r in sides.values())
    print(f"\n{counts} runs ({', '.join(sides)}).")


if __name__ == "__main__":
    main()
