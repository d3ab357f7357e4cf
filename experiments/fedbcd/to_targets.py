"""Rounds and wall time to several targets per setting of a sweep (the FedBCD paper's tables).

For each setting and each target value, every finished run's first evaluation that reaches the
target gives its round and its wall time (``wall_time``, seconds since the run started,
evaluations included); the table holds mean ± population std over seeds, and "–" with the count
of seeds that reached it when not all did:

    .venv/bin/python experiments/fedbcd/to_targets.py runs/sweeps/fedbcd-adult-table2 \
        --metric test_auc --targets 0.85 0.88 0.9
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any


def runs_by_setting(sweep: Path) -> dict[str, list[list[dict[str, Any]]]]:
    """Each finished run's metric records, by setting label in the sweep's order."""
    manifest = json.loads((sweep / "sweep.json").read_text())
    result: dict[str, list[list[dict[str, Any]]]] = {}
    for setting in manifest["settings"]:
        runs = []
        for run in setting["runs"]:
            folder = sweep / run["dir"]
            if (folder / "summary.json").exists():
                lines = (folder / "metrics.jsonl").read_text().splitlines()
                runs.append([json.loads(line) for line in lines if line])
        result[setting["label"]] = runs
    return result


def first_reaching(
    records: list[dict[str, Any]], metric: str, value: float
) -> dict[str, Any] | None:
    """The first record whose metric reaches ``value`` (at or below it for a loss)."""
    lower = metric.endswith("loss")
    for record in records:
        got = record.get(metric)
        if got is not None and (got <= value if lower else got >= value):
            return record
    return None


def cell(values: list[float], reached: int, runs: int, digits: int) -> str:
    """``mean ± std``, or ``– (k/n)`` when not every run reached the target."""
    if reached < runs or not values:
        return f"– ({reached}/{runs})"
    return f"{statistics.fmean(values):.{digits}f} ± {statistics.pstdev(values):.{digits}f}"


def table(sweep: Path, metric: str, targets: list[float]) -> str:
    """The Markdown table: per target, rounds then wall seconds."""
    header = ["setting", "seeds"]
    for target in targets:
        header += [f"rounds to {metric} ≥ {target:g}", f"seconds to {target:g}"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for label, runs in runs_by_setting(sweep).items():
        cells = [label, str(len(runs))]
        for target in targets:
            hits = [r for r in (first_reaching(run, metric, target) for run in runs) if r]
            cells.append(cell([h["round"] for h in hits], len(hits), len(runs), 1))
            cells.append(cell([h["wall_time"] for h in hits], len(hits), len(runs), 1))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    """Print the table of one sweep folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path, help="sweep folder (holds sweep.json)")
    parser.add_argument("--metric", default="test_auc", help="metric of the targets")
    parser.add_argument("--targets", type=float, nargs="+", required=True, help="target values")
    args = parser.parse_args()
    print(table(args.sweep, args.metric, args.targets))


if __name__ == "__main__":
    main()
