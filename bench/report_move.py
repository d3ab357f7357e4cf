"""Print docs/benchmarks.md's before/after table of the composition-root move from raw results.

.venv/bin/python bench/report_move.py [bench/results/composition_move]

Each file is one benchmark run's JSON (old = before the move, new = after), as the benchmark
scripts print it.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def load(folder: Path, pattern: str) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(folder.glob(pattern))]


def listed(values: list[float], digits: int = 3) -> str:
    return ", ".join(f"{v:.{digits}f}" for v in values)


Runs = dict[str, list[dict[str, Any]]]
Pick = Callable[[dict[str, Any]], float]


def each(runs: Runs, pick: Pick) -> tuple[str, str]:
    """Every run's value, before and after."""
    return listed([pick(r) for r in runs["old"]]), listed([pick(r) for r in runs["new"]])


def median(runs: Runs, pick: Pick) -> tuple[str, str]:
    """The median over the runs, before and after."""
    old, new = (statistics.median(pick(r) for r in runs[side]) for side in ("old", "new"))
    return f"{old:.3f}", f"{new:.3f}"


def rows(folder: Path) -> list[tuple[str, str, str]]:
    """The table's rows: what, before, after."""
    runs = {
        kind: {side: load(folder, f"{kind}_{side}_*.json") for side in ("old", "new")}
        for kind in ("vfl_vs_centralized", "grpc", "pbm", "compressors")
    }
    central, grpc, pbm, comp = (runs[k] for k in runs)
    table = [
        ("VFL / centralized, batch 128", *each(central, lambda r: r["ratio_vfl_over_centralized"])),
        (
            "split floor / centralized",
            *each(central, lambda r: r["ratio_split_floor_over_centralized"]),
        ),
        ("gRPC / in-process wall time", *each(grpc, lambda r: r["time_ratio"])),
        ("gRPC / in-process CPU seconds", *each(grpc, lambda r: r["cpu_ratio"])),
    ]
    for parties in (4, 16):
        label = f"PBM + masking share of a round, M = {parties} (median)"
        table.append((label, *median(pbm, lambda r, m=parties: r[f"M={m}"]["fraction"])))
    for name in ("lattice-b2", "scalar-b2"):
        fraction: Pick = lambda r, n=name: r["compressors"][n]["fraction_of_round"]  # noqa: E731
        table.append((f"{name} share of a C-VFL round", *each(comp, fraction)))
    return table


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bench/results/composition_move"
    print("| benchmark | before the move | after the move |")
    print("|---|---|---|")
    for name, old, new in rows(folder):
        print(f"| {name} | {old} | {new} |")


if __name__ == "__main__":
    main()
