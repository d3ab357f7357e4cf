"""Final and best test accuracy with the accountant's epsilon per setting of a VFL-PBM sweep.

Reads each finished run's ``summary.json`` and prints a Markdown table (mean ± population std
over seeds; epsilon at the run's delta, identical across seeds). The committed results of the
four sweeps of ``docs/reproductions/pbm.md`` live in ``experiments/pbm/results/``:

    .venv/bin/python experiments/pbm/table.py experiments/pbm/results/pbm-mnist-quadrants
    .venv/bin/python experiments/pbm/table.py --doc          # rewrite the doc's four tables
    .venv/bin/python experiments/pbm/table.py --doc --check  # only say whether they are current
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DOC = HERE.parents[1] / "docs/reproductions/pbm.md"
SWEEPS = (
    "pbm-fashion-mnist-quadrants",
    "pbm-mnist-quadrants",
    "pbm-fashion-mnist-strips7",
    "pbm-mnist-strips7",
)
_SETTING = re.compile(r"^beta=(?P<beta>[0-9.]+), ?trials=(?P<trials>[0-9]+)$")


def pretty(label: str) -> str:
    """``beta=0.05, trials=4`` as ``β = 0.05, b = 4``; the non-private case by its model."""
    match = _SETTING.match(label)
    if match:
        return f"β = {match['beta']}, b = {match['trials']}"
    return "non-private sum model" if label == "non-private" else label


def table(sweep: Path) -> str:
    """The Markdown table of one sweep folder."""
    manifest = json.loads((sweep / "sweep.json").read_text())
    lines = [
        "| setting | seeds | final test accuracy (%) | best test accuracy (%) | ε at δ = 1e-5 |",
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
        label = pretty(setting["label"])
        if not final:
            lines.append(f"| {label} | 0 | – | – | – |")
            continue
        eps = f"{statistics.fmean(epsilon):.3g}" if epsilon else "– (no privacy)"
        lines.append(
            f"| {label} | {len(final)} | {statistics.fmean(final):.2f} ±"
            f" {statistics.pstdev(final):.2f} | {statistics.fmean(best):.2f} ±"
            f" {statistics.pstdev(best):.2f} | {eps} |"
        )
    return "\n".join(lines)


def with_tables(doc: str, results: Path = RESULTS) -> str:
    """``doc`` with every ``<!-- pbm-table:NAME -->`` block replaced by NAME's table."""
    for name in SWEEPS:
        start, end = f"<!-- pbm-table:{name}:start -->\n", f"<!-- pbm-table:{name}:end -->"
        if start not in doc or end not in doc:
            raise SystemExit(f"{DOC}: no {start.strip()} ... {end} block for sweep {name}")
        head, rest = doc.split(start, 1)
        _, tail = rest.split(end, 1)
        doc = f"{head}{start}{table(results / name)}\n{end}{tail}"
    return doc


def main() -> None:
    """Print one sweep's table, or rewrite (or check) the doc's tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path, nargs="?", help="sweep folder (holds sweep.json)")
    parser.add_argument("--doc", action="store_true", help=f"the four tables of {DOC.name}")
    parser.add_argument("--check", action="store_true", help="with --doc: change nothing")
    args = parser.parse_args()
    if not args.doc:
        if args.sweep is None:
            parser.error("name a sweep folder, or give --doc")
        print(table(args.sweep))
        return
    current = DOC.read_text()
    fresh = with_tables(current)
    if args.check:
        if fresh != current:
            sys.exit(f"{DOC} is stale: run .venv/bin/python experiments/pbm/table.py --doc")
        print(f"{DOC}: every table equals what the committed results give")
        return
    DOC.write_text(fresh)


if __name__ == "__main__":
    main()
