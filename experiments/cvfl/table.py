"""Every table of docs/reproductions/cvfl.md, computed from the committed sweep results.

The sweeps of ``experiments/cvfl/*.toml`` write their runs under ``experiments/cvfl/results/``
(each run's ``summary.json``, ``metrics.jsonl`` and ``config.toml`` are committed). Definitions
(best metric, max reached, cost to target) are vfl's own sweep report's
(``vfl.experiments.aggregate``): mean ± population std over seeds, "–" when a seed never
reached the target.

    .venv/bin/python experiments/cvfl/table.py --doc          # rewrite the doc's tables
    .venv/bin/python experiments/cvfl/table.py --doc --check  # only say whether they are current
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from vfl.experiments.aggregate import MB, RunResult, load_runs, setting_row
from vfl.experiments.doc_blocks import Draw, doc_cli, render_blocks
from vfl.experiments.files import read_manifest
from vfl.experiments.report import draw_sweep
from vfl.experiments.tables import markdown_grid, markdown_rows, seeds_cell
from vfl.results.summary import Target, first_reaching

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DOC = HERE.parents[1] / "docs/reproductions/cvfl.md"
COMMAND = ".venv/bin/python experiments/cvfl/table.py --doc"
MNIST = "cvfl-mnist"
ADULT = "cvfl-adult"
FASHION = "cvfl-fashion-mnist-lattice2"
CAUSE = "cvfl-fashion-mnist-cause"
FINE = "cvfl-mnist-fine-eval"
TABLE_D1 = "cvfl-adult-table-d1"
TIME = "cvfl-adult-time"
TWELVE = "cvfl-mnist-12-parties"
SWEEPS = (MNIST, ADULT, FASHION, CAUSE, FINE, TABLE_D1, TIME, TWELVE)
LATTICE_2, NONE = "lattice, b = 2", "none, b = 32"
_BITS = re.compile(r"^(?:name=)?(?P<name>scalar|lattice|topk|none)(?:, bits=(?P<bits>\d+))?")


def pretty(label: str) -> str:
    """``name=lattice, bits=2`` or ``lattice, bits=2, lr=0.02`` as ``lattice, b = 2, lr=0.02``."""
    match = _BITS.match(label)
    if match is None:
        return label
    name = "top-k" if match["name"] == "topk" else match["name"]
    head = f"{name}, b = {match['bits']}" if match["bits"] else name
    return head + label[match.end() :]


def grouped(sweep: Path) -> dict[str, list[RunResult]]:
    """The finished runs of each setting of a sweep, by pretty label, in sweep order."""
    runs = load_runs(sweep, read_manifest(sweep))
    return {pretty(label): group for label, group in runs.items()}


def _target(sweep: Path) -> Target:
    manifest = read_manifest(sweep)
    assert manifest.target is not None, f"{sweep}: the sweep names no target"
    return Target(*manifest.target)


def standard(sweep: str) -> Callable[[Path], str]:
    """The sweep report's table (best, max reached, cost to target), labels made pretty."""

    def make(results: Path) -> str:
        folder = results / sweep
        manifest, target = read_manifest(folder), _target(folder)
        rows = [
            setting_row(label, group, metric=manifest.metric, target=target)
            for label, group in grouped(folder).items()
        ]
        return markdown_rows(rows, metric=manifest.metric, target=target)

    return make


def hits(group: Sequence[RunResult], metric: str, value: float) -> list[dict[str, float]]:
    """Each run's first evaluation reaching ``value`` (runs that never did are left out)."""
    target = Target(metric, value)
    found = (first_reaching(list(run.records), target) for run in group)
    return [hit for hit in found if hit is not None]


def best(group: Sequence[RunResult], metric: str) -> list[float]:
    """Each run's best evaluation of ``metric``."""
    return [max(r[metric] for r in run.records if r.get(metric) is not None) for run in group]


def fashion(sweep: str) -> Callable[[Path], str]:
    """Best accuracy, rounds and MB to 0.70 and 0.75 per setting of a Fashion-MNIST sweep."""

    def make(results: Path) -> str:
        header = ["setting", "seeds", "best test accuracy", "rounds to ≥ 0.70", "MB to 0.70"]
        header += ["rounds to ≥ 0.75", "MB to 0.75", "seeds reaching 0.75"]
        rows = []
        for label, group in grouped(results / sweep).items():
            accuracy = seeds_cell(best(group, "test_accuracy"), len(group), ".4f")
            row = [label, str(len(group)), accuracy]
            for value in (0.70, 0.75):
                found = hits(group, "test_accuracy", value)
                row.append(seeds_cell([h["round"] for h in found], len(group)))
                row.append(seeds_cell([h["bytes"] / MB for h in found], len(group), ".2f"))
            rows.append([*row, f"{len(hits(group, 'test_accuracy', 0.75))}/{len(group)}"])
        return markdown_grid(header, rows)

    return make


def acceptance(results: Path) -> str:
    """Lattice b = 2 against no compression on MNIST and Adult: bytes to target, best metric."""
    header = ["data", "MB to target, lattice b = 2", "MB to target, b = 32", "fewer bytes"]
    header += ["best metric, b = 2", "best metric, b = 32", "gap"]
    rows = []
    for sweep, name in ((MNIST, "MNIST (accuracy 0.94"), (ADULT, "Adult (F1 0.6")):
        folder = results / sweep
        manifest, target = read_manifest(folder), _target(folder)
        runs = grouped(folder)
        cost = {
            key: setting_row(key, runs[key], metric=manifest.metric, target=target)
            for key in (LATTICE_2, NONE)
        }
        lattice, plain = cost[LATTICE_2], cost[NONE]
        seeds = f"{lattice.num_runs} seeds)"
        row = [f"{name}, {seeds}"]
        megabytes = [c.target.megabytes if c.target else None for c in (lattice, plain)]
        if all(m is not None for m in megabytes):
            low, high = (m.mean for m in megabytes if m is not None)
            row += [f"{low:.2f} MB", f"{high:.2f} MB", f"**{100 * (1 - low / high):.1f}%**"]
        else:
            row += ["–", "–", "–"]
        gap = 100 * (lattice.best.mean - plain.best.mean)
        row += [f"{lattice.best.mean:.4f}", f"{plain.best.mean:.4f}", f"**{gap:+.2f} pt**"]
        rows.append(row)
    return markdown_grid(header, rows)


def bytes_per_round(results: Path) -> str:
    """The sentence giving MNIST's measured bytes per round, lattice b = 2 and uncompressed."""
    runs = grouped(results / MNIST)
    per_round = {}
    for key in (LATTICE_2, NONE):
        summary = json.loads((runs[key][0].path / "summary.json").read_text())
        per_round[key] = summary["bytes"]["per_round"]
    return (
        f"Measured bytes per round: {per_round[LATTICE_2]:,.0f} at lattice b = 2 against"
        f" {per_round[NONE]:,.0f} uncompressed (training traffic up and down, headers and"
        " framing included)."
    )


def fine_eval(results: Path) -> str:
    """Bytes and rounds to MNIST's 0.94 with an evaluation every 8 rounds."""
    runs = grouped(results / FINE)
    header = ["setting", "seeds", "rounds to accuracy ≥ 0.94", "MB to 0.94", "fewer bytes"]
    megabytes = {
        key: [h["bytes"] / MB for h in hits(group, "test_accuracy", 0.94)]
        for key, group in runs.items()
    }
    rows = []
    for key, group in runs.items():
        rounds = [h["round"] for h in hits(group, "test_accuracy", 0.94)]
        saving = "–"
        if key != NONE and megabytes[key] and megabytes[NONE]:
            ratio = statistics.fmean(megabytes[key]) / statistics.fmean(megabytes[NONE])
            saving = f"{100 * (1 - ratio):.1f}%"
        row = [key, str(len(group)), seeds_cell(rounds, len(group))]
        row.append(seeds_cell(megabytes[key], len(group), ".2f"))
        rows.append([*row, saving])
    return markdown_grid(header, rows)


def table_d1(results: Path) -> str:
    """MB to Adult's F1 0.6: Algorithm 2 at Q = 1 against Algorithm 1 at Q = 10 and 25."""
    runs = grouped(results / TABLE_D1)
    columns = ("algorithm 2, Q=1", "algorithm 1, Q=10", "algorithm 1, Q=25")
    header = ["compressor", "Q = 1 (Algorithm 2)", "Q = 10 (Algorithm 1)", "Q = 25 (Algorithm 1)"]
    rows = []
    for compressor in (NONE, "lattice, b = 3"):
        row = [compressor]
        for column in columns:
            group = runs[f"{compressor}, {column}"]
            found = hits(group, "test_f1", 0.6)
            row.append(seeds_cell([h["bytes"] / MB for h in found], len(group), ".2f") + " MB")
        rows.append(row)
    return markdown_grid(header, rows)


def latency_time(results: Path) -> str:
    """Seconds to Adult's F1 0.6 under each latency t_c, per Q, and the rounds to it."""
    runs = grouped(results / TIME)
    labels = list(runs)
    times: dict[str, dict[str, list[float]]] = {}
    for label, group in runs.items():
        for run in group:
            summary = json.loads((run.path / "summary.json").read_text())
            seconds = (
                summary["target"]["time"]["seconds_by_latency_ms"]
                if summary["target"]["reached"]
                else {}
            )
            for latency, value in seconds.items():
                times.setdefault(latency, {}).setdefault(label, []).append(value)
    header = ["t_c (ms)"] + [label.replace("local_steps=", "Q = ") for label in labels]
    rows = [
        [latency, *(seeds_cell(times[latency].get(x, []), len(runs[x]), ".2f") for x in labels)]
        for latency in times
    ]
    rounds = [
        f"{seeds_cell([h['round'] for h in hits(runs[label], 'test_f1', 0.6)], len(runs[label]))}"
        f" ({label.replace('local_steps=', 'Q = ')})"
        for label in labels
    ]
    return markdown_grid(header, rows) + "\n\nRounds to the target: " + ", ".join(rounds) + "."


BLOCKS: dict[str, Callable[[Path], str]] = {
    "cvfl-mnist": standard(MNIST),
    "cvfl-mnist-bytes-per-round": bytes_per_round,
    "cvfl-adult": standard(ADULT),
    "cvfl-fashion-mnist": fashion(FASHION),
    "cvfl-fashion-mnist-cause": fashion(CAUSE),
    "cvfl-acceptance": acceptance,
    "cvfl-mnist-fine-eval": fine_eval,
    "cvfl-table-d1": table_d1,
    "cvfl-time": latency_time,
    "cvfl-mnist-12-parties": standard(TWELVE),
}


IMG = DOC.parent / "img"


def figures(results: Path = RESULTS) -> dict[Path, Draw]:
    """Each figure of the doc and how ``vfl plot`` draws it from its sweep's results."""
    return {
        IMG / "cvfl-mnist-accuracy-vs-mb.png": partial(draw_sweep, results / MNIST, x="megabytes"),
        IMG / "cvfl-mnist-accuracy-vs-epoch.png": partial(draw_sweep, results / MNIST, x="epoch"),
        IMG / "cvfl-adult-f1-vs-mb.png": partial(draw_sweep, results / ADULT, x="megabytes"),
    }


def blocks(results: Path = RESULTS) -> dict[str, str]:
    """Every generated block of the doc, from the results under ``results``."""
    return render_blocks(BLOCKS, results)


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
