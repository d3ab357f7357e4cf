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
from functools import partial
from pathlib import Path

from vfl.experiments.doc_blocks import Draw, add_doc_arguments, rewrite_or_check
from vfl.experiments.report import draw_sweep

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DOC = HERE.parents[1] / "docs/reproductions/pbm.md"
COMMAND = ".venv/bin/python experiments/pbm/table.py --doc"
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


def blocks(results: Path = RESULTS) -> dict[str, str]:
    """Every generated block of the doc: one table per sweep, named after the sweep."""
    return {name: table(results / name) for name in SWEEPS}


IMG = DOC.parent / "img"
FIGURE_SWEEPS = {
    "pbm-fashion-accuracy-vs-epoch.png": "pbm-fashion-mnist-quadrants",
    "pbm-mnist-accuracy-vs-epoch.png": "pbm-mnist-quadrants",
    "pbm-fashion-strips7-accuracy-vs-epoch.png": "pbm-fashion-mnist-strips7",
    "pbm-mnist-strips7-accuracy-vs-epoch.png": "pbm-mnist-strips7",
}


def figures(results: Path = RESULTS) -> dict[Path, Draw]:
    """Each figure of the doc and how ``vfl plot`` draws it from its sweep's results."""
    return {
        IMG / name: partial(draw_sweep, results / sweep, x="epoch")
        for name, sweep in FIGURE_SWEEPS.items()
    }


def main() -> None:
    """Print one sweep's table, or rewrite (or check) the doc's tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path, nargs="?", help="sweep folder (holds sweep.json)")
    add_doc_arguments(parser, DOC)
    args = parser.parse_args()
    if not args.doc:
        if args.sweep is None:
            parser.error("name a sweep folder, or give --doc")
        print(table(args.sweep))
        return
    print(rewrite_or_check(DOC, blocks(), check=args.check, command=COMMAND, figures=figures()))


if __name__ == "__main__":
    main()
