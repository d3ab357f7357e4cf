"""Reference/compiled table of ``bench_compressors.py --only lattice`` runs, medians over runs.

    .venv/bin/python bench/report_lattice.py [bench/results/lattice_issue14]

The folder holds ``reference_<i>.json`` (``--reference``: the numpy path) and ``compiled_<i>.json``
(the numba loops), run alternately on an idle machine, each with its own C-VFL round time.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
SIDES = ("reference", "compiled")


def runs(folder: Path, side: str) -> list[dict[str, Any]]:
    """The results of one side, in run order."""
    return [json.loads(p.read_text()) for p in sorted(folder.glob(f"{side}_*.json"))]


def main() -> None:
    """Print the Markdown table."""
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "results/lattice_issue14"
    results = {side: runs(folder, side) for side in SIDES}
    rounds = {
        side: statistics.median(r["train_round_ms"]["median"] for r in results[side])
        for side in SIDES
    }
    print(
        "| setting | encode + decode, numpy (ms) | compiled (ms) | speed-up"
        " | share of a C-VFL round, numpy | compiled |"
    )
    print("|---|---|---|---|---|---|")
    for label in results["compiled"][0]["compressors"]:
        ms = {
            s: statistics.median(r["compressors"][label]["round_ms"] for r in results[s])
            for s in SIDES
        }
        share = {
            s: statistics.median(r["compressors"][label]["fraction_of_round"] for r in results[s])
            for s in SIDES
        }
        print(
            f"| {label} | {ms['reference']:.3f} | {ms['compiled']:.3f}"
            f" | {ms['reference'] / ms['compiled']:.2f}x"
            f" | {share['reference']:.2%} | {share['compiled']:.2%} |"
        )
    counts = " + ".join(f"{len(results[s])} {s}" for s in SIDES)
    print(
        f"\n{counts} runs; median C-VFL round (Q = 10) {rounds['reference']:.1f} ms"
        f" (numpy runs) and {rounds['compiled']:.1f} ms (compiled runs)."
    )


if __name__ == "__main__":
    main()
