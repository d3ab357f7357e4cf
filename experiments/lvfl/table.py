"""Every table and figure of docs/reproductions/lvfl.md, computed from the committed results.

The sweeps ``fig2``, ``fig3a``, ``fig3b`` and ``claims`` write their runs under
``experiments/lvfl/results/``. Each table holds mean ± population std over seeds; changes are
against NL (no lightweighting, from the Fig. 2 sweep, the same base and seeds):

    .venv/bin/python experiments/lvfl/table.py --doc          # rewrite the tables and figures
    .venv/bin/python experiments/lvfl/table.py --doc --check  # only say whether they are current
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from vfl.experiments.doc_blocks import Draw, doc_cli, render_blocks
from vfl.experiments.report import draw_sweep
from vfl.experiments.tables import markdown_grid, seeds_cell

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DOC = HERE.parents[1] / "docs/reproductions/lvfl.md"
IMG = DOC.parent / "img"
COMMAND = ".venv/bin/python experiments/lvfl/table.py --doc"
FIG2, FIG3A, FIG3B, CLAIMS = "lvfl-fig2", "lvfl-fig3a", "lvfl-fig3b", "lvfl-claims"
SWEEPS = (FIG2, FIG3A, FIG3B, CLAIMS)
REFERENCE = "NL"
MB = 2**20
Runs = Sequence[tuple[dict[str, Any], list[dict[str, Any]]]]
PER_RUN_KEYS = ("accuracy", "gflops", "compute_s", "upload_mb", "traffic_mb")
"""The per-run figures of :func:`figures_of`."""


def load(sweep: Path) -> dict[str, list[tuple[dict[str, Any], list[dict[str, Any]]]]]:
    """Each finished run's summary and evaluations, by setting label in the sweep's order."""
    manifest = json.loads((sweep / "sweep.json").read_text())
    runs: dict[str, list[tuple[dict[str, Any], list[dict[str, Any]]]]] = {}
    for setting in manifest["settings"]:
        finished = []
        for run in setting["runs"]:
            folder = sweep / run["dir"]
            if (folder / "summary.json").is_file():
                lines = (folder / "metrics.jsonl").read_text().splitlines()
                records = [json.loads(line) for line in lines if line]
                finished.append((json.loads((folder / "summary.json").read_text()), records))
        runs[setting["label"]] = finished
    return runs


def figures_of(summary: dict[str, Any]) -> dict[str, float]:
    """The per-run figures the tables reduce."""
    return {
        "accuracy": 100 * summary["final"]["test_accuracy"],
        "gflops": summary["compute"]["train_flops"] / 1e9,
        "compute_s": summary["compute"]["compute_seconds"],
        "upload_mb": summary["bytes"]["train_up"] / MB,
        "traffic_mb": summary["bytes"]["train_total"] / MB,
    }


def column(runs: Runs, key: str) -> list[float]:
    """One figure of every run."""
    return [figures_of(summary)[key] for summary, _ in runs]


def accuracy_at(runs: Runs, rnd: int) -> float:
    """The seed-mean test accuracy of the evaluation at round ``rnd``."""
    values = [r["test_accuracy"] for _, records in runs for r in records if r["round"] == rnd]
    return statistics.fmean(values)


def window(runs: Runs, low: int, high: int) -> float:
    """The mean test accuracy over the evaluations at rounds ``low``..``high`` and the seeds."""
    values = [
        r["test_accuracy"] for _, records in runs for r in records if low <= r["round"] <= high
    ]
    return statistics.fmean(values)


def change(value: float, base: float, *, points: bool = False) -> str:
    """``(+1.2 pt)`` or ``(−3.4%)`` against the reference."""
    if points:
        return f"({value - base:+.2f} pt)"
    return f"({100 * (value / base - 1):+.1f}%)"


def fig2(results: Path) -> str:
    """NL, PL, ML and L: accuracy, FLOPs, compute seconds, uploaded and total MB."""
    runs = load(results / FIG2)
    base = {key: statistics.fmean(column(runs[REFERENCE], key)) for key in PER_RUN_KEYS}
    header = ["setting", "seeds", "final test accuracy (%)", "bottom-model training GFLOPs"]
    header += ["measured party compute (s)", "uploaded MB", "traffic up + down MB"]
    rows = []
    for label, group in runs.items():
        accuracy = seeds_cell(column(group, "accuracy"), len(group), ".2f")
        if label != REFERENCE:
            mean = statistics.fmean(column(group, "accuracy"))
            accuracy += " " + change(mean, base["accuracy"], points=True)
        row = [label, str(len(group)), accuracy]
        for key in ("gflops", "compute_s", "upload_mb", "traffic_mb"):
            cell = seeds_cell(column(group, key), len(group))
            if label != REFERENCE:
                cell += " " + change(statistics.fmean(column(group, key)), base[key])
            row.append(cell)
        rows.append(row)
    return markdown_grid(header, rows)


def _against_nl(
    results: Path, sweep: str, extra: Callable[[Runs], str], key: str
) -> list[list[str]]:
    """NL's row then the sweep's: accuracy, its change, ``extra``, and ``key`` with its change."""
    reference = load(results / FIG2)[REFERENCE]
    base = statistics.fmean(column(reference, "accuracy"))
    rows = []
    for label, group in [(f"0 ({REFERENCE})", reference), *load(results / sweep).items()]:
        mean, value = (
            statistics.fmean(column(group, "accuracy")),
            statistics.fmean(column(group, key)),
        )
        gap, size = "–", f"{value:.1f}"
        if group is not reference:
            gap = f"{mean - base:+.2f} pt"
            size += " " + change(value, statistics.fmean(column(reference, key)))
        accuracy = seeds_cell(column(group, "accuracy"), len(group), ".2f")
        value_only = label if group is reference else label.split("=")[-1]  # "alpha=0.2" -> "0.2"
        rows.append([value_only, accuracy, gap, extra(group), size])
    return rows


def _around_pruning(group: Runs) -> str:
    return " -> ".join(f"{accuracy_at(group, r):.3f}" for r in (40, 50, 60))


def _early(group: Runs) -> str:
    return f"{window(group, 10, 40):.3f}"


def fig3a(results: Path) -> str:
    """Alpha from round 40: accuracy, its change, the accuracy around the event, GFLOPs."""
    header = ["α from round 40", "final test accuracy (%)", "change vs NL"]
    header += ["mean accuracy at round 40 -> 50 -> 60", "bottom-model training GFLOPs"]
    return markdown_grid(header, _against_nl(results, FIG3A, _around_pruning, "gflops"))


def fig3b(results: Path) -> str:
    """Beta from the start: accuracy, its change, the early accuracy, uploaded MB."""
    header = ["β", "final test accuracy (%)", "change vs NL", "mean accuracy over rounds 10-40"]
    header.append("uploaded MB")
    return markdown_grid(header, _against_nl(results, FIG3B, _early, "upload_mb"))


def claims(results: Path) -> str:
    """The claim experiments: accuracy and its change, early accuracy, GFLOPs, uploaded MB."""
    reference = load(results / FIG2)[REFERENCE]
    base = statistics.fmean(column(reference, "accuracy"))
    header = ["setting", "seeds", "final test accuracy (%)", "change vs NL"]
    header += ["mean accuracy over rounds 10-40", "bottom-model GFLOPs", "uploaded MB"]
    rows = []
    for label, group in load(results / CLAIMS).items():
        mean = statistics.fmean(column(group, "accuracy"))
        row = [label, str(len(group)), seeds_cell(column(group, "accuracy"), len(group), ".2f")]
        row += [f"{mean - base:+.2f} pt", f"{window(group, 10, 40):.3f}"]
        row += [f"{statistics.fmean(column(group, key)):.1f}" for key in ("gflops", "upload_mb")]
        rows.append(row)
    return markdown_grid(header, rows)


def pruning_events(results: Path) -> str:
    """PL evaluated every 2 rounds: the seed-mean accuracy around the pruning rounds 20 and 60."""
    group = load(results / CLAIMS)["PL, evaluated every 2 rounds"]
    rows = []
    for start in (16, 56):
        trace = " -> ".join(f"{accuracy_at(group, r):.3f}" for r in range(start, start + 21, 2))
        rows.append([f"{start}-{start + 20}", trace])
    return markdown_grid(["rounds", "mean test accuracy, every 2 rounds"], rows)


BLOCKS: dict[str, Callable[[Path], str]] = {
    "lvfl-fig2": fig2,
    "lvfl-fig3a": fig3a,
    "lvfl-fig3b": fig3b,
    "lvfl-claims": claims,
    "lvfl-pruning-events": pruning_events,
}


def blocks(results: Path = RESULTS) -> dict[str, str]:
    """Every generated block of the doc, from the results under ``results``."""
    return render_blocks(BLOCKS, results)


def figures(results: Path = RESULTS) -> dict[Path, Draw]:
    """Each figure of the doc and how ``vfl plot`` draws it from its sweep's results."""
    return {
        IMG / "lvfl-fig2-accuracy-vs-round.png": partial(draw_sweep, results / FIG2, x="round"),
        IMG / "lvfl-fig2-accuracy-vs-gflops.png": partial(draw_sweep, results / FIG2, x="gflops"),
        IMG / "lvfl-fig2-accuracy-vs-mb.png": partial(draw_sweep, results / FIG2, x="megabytes"),
        IMG / "lvfl-fig3a-accuracy-vs-round.png": partial(draw_sweep, results / FIG3A, x="round"),
        IMG / "lvfl-fig3b-accuracy-vs-round.png": partial(draw_sweep, results / FIG3B, x="round"),
    }


def main() -> None:
    """Rewrite (or check) the doc's tables and figures, or print one block."""
    print(
        doc_cli(
            description=__doc__.splitlines()[0],
            doc=DOC,
            command=COMMAND,
            blocks=BLOCKS,
            results=RESULTS,
            figures=figures(),
        )
    )


if __name__ == "__main__":
    main()
