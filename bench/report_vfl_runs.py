"""Table of alternating before/after runs of ``bench_vfl_vs_centralized.py`` from raw results.

    .venv/bin/python bench/report_vfl_runs.py bench/results/vfl_vs_centralized_fair

The folder holds ``<side>_b<batch>_<i>.json`` (``side`` before or after, or separate and
pipelined for ``protocol.pipeline`` off and on), each one run's JSON as the benchmark prints it;
rows come in run order, the first side then the second, batch by batch.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

_NAME = re.compile(r"^(?P<side>[a-z]+)_b(?P<batch>\d+)_(?P<run>\d+)\.json$")
_SECOND = ("after", "pipelined")


def row(side: str, batch: int, run: int, result: dict[str, Any]) -> str:
    """One Markdown row of a run."""
    wall, cpu = result["median_epoch_s"], result["median_epoch_cpu_s"]
    cells = [
        f"{side} {run}",
        str(batch),
        f"{result['ratio_vfl_over_centralized']:.3f}",
        f"{result['ratio_vfl_no_codec_over_centralized']:.3f}",
        f"{result['ratio_split_floor_over_centralized']:.3f}",
        f"{wall['vfl']:.3f}",
        f"{cpu['vfl']:.3f}",
        f"{wall['centralized']:.3f}",
        f"{cpu['centralized']:.3f}",
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    """Print the Markdown table of the runs, then the medians by side and batch."""
    folder = Path(sys.argv[1])
    runs = []
    for path in folder.glob("*.json"):
        match = _NAME.match(path.name)
        if match:
            key = (int(match["batch"]), int(match["run"]), match["side"] in _SECOND)
            runs.append((key, match["side"], json.loads(path.read_text())))
    print(
        "| run | batch | vfl / centralized | without codec | split floor | vfl wall (s) | CPU (s)"
        " | centralized wall (s) | CPU (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (batch, run, _), side, result in sorted(runs, key=lambda r: r[0]):
        print(row(side, batch, run, result))
    print()
    print(
        "| side | batch | runs | median vfl / centralized | median vfl CPU s / centralized CPU s |"
    )
    print("|---|---|---|---|---|")
    groups: dict[tuple[int, bool, str], list[dict[str, Any]]] = {}
    for (batch, _, second), side, result in runs:
        groups.setdefault((batch, second, side), []).append(result)
    for (batch, _, side), results in sorted(groups.items()):
        ratio = statistics.median(r["ratio_vfl_over_centralized"] for r in results)
        cpu = statistics.median(
            r["median_epoch_cpu_s"]["vfl"] / r["median_epoch_cpu_s"]["centralized"] for r in results
        )
        print(f"| {side} | {batch} | {len(results)} | **{ratio:.3f}** | {cpu:.3f} |")


if __name__ == "__main__":
    main()
