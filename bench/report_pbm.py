"""Before/after table of ``bench_pbm.py`` runs: the median over alternating single-repeat runs.

    .venv/bin/python bench/report_pbm.py [bench/results/pbm_issue14]

The folder holds ``before_<i>.json`` and ``after_<i>.json``, each the output of
``bench_pbm.py --repeats 1``, run alternately (before, after, before, ...) on an idle machine.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent


def runs(folder: Path, which: str) -> list[dict[str, Any]]:
    """The results of one side, in run order."""
    return [json.loads(p.read_text()) for p in sorted(folder.glob(f"{which}_*.json"))]


def median(results: list[dict[str, Any]], parties: str, key: str) -> float:
    """The median of ``key`` for ``parties`` (``"M=4"``) over ``results``."""
    return float(statistics.median(r[parties][key] for r in results))


def main() -> None:
    """Print the Markdown table."""
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "results/pbm_issue14"
    before, after = runs(folder, "before"), runs(folder, "after")
    print(
        "| parties | round before (ms) | after | PBM + masking before (ms) | after"
        " | share before | after |"
    )
    print("|---|---|---|---|---|---|---|")
    for parties in ("M=4", "M=16"):
        cells = [
            f"{median(side, parties, key):.2f}"
            for key in ("round_ms", "pbm_and_masking_ms")
            for side in (before, after)
        ]
        shares = [f"{median(side, parties, 'fraction'):.1%}" for side in (before, after)]
        print(f"| {parties} | {' | '.join(cells)} | {' | '.join(shares)} |")
    print(f"\n{len(before)} + {len(after)} runs.")


if __name__ == "__main__":
    main()
