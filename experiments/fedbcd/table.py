r"""Rounds and wall time to test-AUC targets per setting of a FedBCD sweep (the paper's tables).

For each setting and each target, every run's first evaluation that reaches the target gives its
round and its wall time (``wall_time``, seconds since the run started, evaluations included);
cells hold mean ± population std over seeds, or "– (k/n)" when only k of the n runs reached it.
A run that stopped with an error (divergence) counts as a run that reached nothing after its
last evaluation. The committed results of ``docs/reproductions/fedbcd.md`` live in
``experiments/fedbcd/results/``:

    .venv/bin/python experiments/fedbcd/table.py experiments/fedbcd/results/fedbcd-adult-table2 \\
        --targets 0.85 0.88 0.9                                # any sweep folder
    .venv/bin/python experiments/fedbcd/table.py --doc          # rewrite the doc's tables
    .venv/bin/python experiments/fedbcd/table.py --doc --check  # only say whether they are current

Step sizes are tuned per Q on each sweep's grid: the MNIST-CNN eta0 per (schedule, Q) at which
the most seeds reach AUC 0.997, ties broken by the fewest mean rounds to it; the Adult Table 2
step size per Q alike for AUC 0.90.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from vfl.experiments.doc_blocks import Draw, add_doc_arguments, render_blocks, rewrite_or_check
from vfl.experiments.report import draw_sweep
from vfl.experiments.tables import markdown_grid, seeds_cell
from vfl.results.summary import Target, first_reaching

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DOC = HERE.parents[1] / "docs/reproductions/fedbcd.md"
COMMAND = ".venv/bin/python experiments/fedbcd/table.py --doc"
MNIST = "fedbcd-mnist-cnn-party-k"
TABLE2 = "fedbcd-adult-table2"
LOGISTIC = "fedbcd-adult-lr"
LARGE_Q = "fedbcd-adult-large-q"
SWEEPS = (MNIST, TABLE2, LOGISTIC, LARGE_Q)
METRIC = "test_auc"
MNIST_TARGET = 0.997
SHARED_ETA = 0.2
PAPER_MNIST_ROUNDS = {("parallel", 1): 46, ("parallel", 3): 16, ("parallel", 5): 8}
PAPER_MNIST_ROUNDS |= {("sequential", 1): 48, ("sequential", 3): 15, ("sequential", 5): 9}


@dataclass(frozen=True)
class Run:
    """One run of a setting: its evaluations, and whether it finished (has a summary)."""

    records: tuple[dict[str, Any], ...]
    finished: bool

    def first_reaching(self, value: float) -> dict[str, Any] | None:
        """Round and wall time of the first evaluation whose test AUC is at least ``value``."""
        return first_reaching(list(self.records), Target(METRIC, value))

    def best(self) -> float | None:
        """The best test AUC over the run's evaluations (None before any)."""
        values = [r[METRIC] for r in self.records if r.get(METRIC) is not None]
        return max(values) if values else None


@dataclass(frozen=True)
class Setting:
    """One setting of a sweep: its overrides and its runs in seed order."""

    label: str
    overrides: dict[str, Any]
    runs: tuple[Run, ...]

    def reaching(self, value: float, key: str) -> tuple[list[float], int]:
        """``key`` (round or wall_time) of the runs reaching ``value``, and the run count."""
        hits = [r for r in (run.first_reaching(value) for run in self.runs) if r is not None]
        return [float(h[key]) for h in hits], len(self.runs)


def load(sweep: Path) -> list[Setting]:
    """Every setting of a sweep folder with its runs (finished, or ended by an error)."""
    manifest = json.loads((sweep / "sweep.json").read_text())
    settings = []
    for entry in manifest["settings"]:
        runs = []
        for run in entry["runs"]:
            folder = sweep / run["dir"]
            metrics = folder / "metrics.jsonl"
            if not (metrics.is_file() or (folder / "error.txt").is_file()):
                continue  # not run yet
            lines = metrics.read_text().splitlines() if metrics.is_file() else []
            records = tuple(json.loads(line) for line in lines if line)
            runs.append(Run(records, (folder / "summary.json").is_file()))
        settings.append(Setting(entry["label"], entry["overrides"], tuple(runs)))
    return settings


def targets_table(sweep: Path, targets: Sequence[float]) -> str:
    """Rounds and seconds to each target, and the best AUC, per setting of any sweep."""
    header = ["setting", "runs"]
    for target in targets:
        header += [f"rounds to AUC ≥ {target:g}", f"s to {target:g}"]
    rows = []
    for setting in load(sweep):
        row = [setting.label, str(len(setting.runs))]
        for target in targets:
            row.append(seeds_cell(*setting.reaching(target, "round")))
            row.append(seeds_cell(*setting.reaching(target, "wall_time")))
        rows.append(row)
    return markdown_grid(header, rows)


def _mnist_groups(settings: Sequence[Setting]) -> dict[tuple[str, int], list[Setting]]:
    groups: dict[tuple[str, int], list[Setting]] = {}
    for setting in settings:
        key = (setting.overrides["protocol.schedule"], setting.overrides["protocol.local_steps"])
        groups.setdefault(key, []).append(setting)
    return groups


def fastest(settings: Sequence[Setting], target: float) -> Setting:
    """The setting at which the most seeds reach ``target``, then in the fewest mean rounds."""

    def rank(setting: Setting) -> tuple[int, float]:
        rounds, _ = setting.reaching(target, "round")
        return (-len(rounds), statistics.fmean(rounds) if rounds else float("inf"))

    return min(settings, key=rank)


def tuned(settings: Sequence[Setting]) -> Setting:
    """The MNIST-CNN setting whose eta0 is best for AUC 0.997 (:func:`fastest`)."""
    return fastest(settings, MNIST_TARGET)


def _eta(setting: Setting) -> float:
    return float(setting.overrides["train.optimizer.lr"])


def _algorithm(schedule: str, steps: int) -> str:
    if schedule == "parallel" and steps == 1:
        return "FedSGD (FedBCD-p, Q = 1)"
    return f"FedBCD-{schedule[0]}"


def mnist_tuned(results: Path) -> str:
    """Per (schedule, Q) at its tuned eta0: rounds to three targets, seconds, the paper's."""
    header = ["algorithm", "Q", "tuned η0", "rounds to AUC ≥ 0.98", "rounds to AUC ≥ 0.99"]
    header += ["rounds to AUC ≥ 0.997", "s to 0.997", "paper: rounds to 0.997"]
    rows = []
    for (schedule, steps), group in _mnist_groups(load(results / MNIST)).items():
        best = tuned(group)
        row = [_algorithm(schedule, steps), str(steps), f"{_eta(best):g}"]
        targets = (0.98, 0.99, MNIST_TARGET)
        row += [seeds_cell(*best.reaching(target, "round")) for target in targets]
        row += [
            seeds_cell(*best.reaching(MNIST_TARGET, "wall_time")),
            str(PAPER_MNIST_ROUNDS[schedule, steps]),
        ]
        rows.append(row)
    return markdown_grid(header, rows)


def mnist_grid(results: Path) -> str:
    """Rounds to AUC 0.997 at every swept eta0, per (schedule, Q)."""
    groups = _mnist_groups(load(results / MNIST))
    etas = [_eta(s) for s in next(iter(groups.values()))]
    header = ["algorithm", "Q"] + [f"η0 = {eta:g}" for eta in etas]
    rows = []
    for (schedule, steps), group in groups.items():
        cells = [seeds_cell(*s.reaching(MNIST_TARGET, "round")) for s in group]
        rows.append([_algorithm(schedule, steps), str(steps), *cells])
    return markdown_grid(header, rows)


def mnist_reduction(results: Path) -> str:
    """The sentence stating FedBCD-p Q = 5's rounds against FedSGD's, tuned and shared."""
    groups = _mnist_groups(load(results / MNIST))
    sentences = []
    for name, pick in (("tuned", tuned), ("shared", _shared)):
        sgd, q5 = pick(groups["parallel", 1]), pick(groups["parallel", 5])
        sgd_rounds, sgd_runs = sgd.reaching(MNIST_TARGET, "round")
        q5_rounds, q5_runs = q5.reaching(MNIST_TARGET, "round")
        where = "each at its tuned η0" if name == "tuned" else f"both at η0 = {SHARED_ETA:g}"
        text = (
            f"**{name.capitalize()} step size** ({where}): FedBCD-p with Q = 5 (η0 ="
            f" {_eta(q5):g}) reaches AUC {MNIST_TARGET:g} in"
            f" {seeds_cell(q5_rounds, q5_runs)} rounds,"
            f" FedSGD (η0 = {_eta(sgd):g}) in {seeds_cell(sgd_rounds, sgd_runs)}"
        )
        if len(sgd_rounds) == sgd_runs and len(q5_rounds) == q5_runs and sgd_rounds:
            share = statistics.fmean(q5_rounds) / statistics.fmean(sgd_rounds)
            text += f": {100 * share:.1f}% of FedSGD's rounds (the paper: 8 of 46, 17.4%)."
        else:
            text += ": not every seed reached the target, so no ratio is given."
        sentences.append(text)
    return "\n\n".join(sentences)


def _shared(group: Sequence[Setting]) -> Setting:
    return next(s for s in group if _eta(s) == SHARED_ETA)


def adult_table2(results: Path) -> str:
    """Per Q at its tuned step size and at the shared 0.1: rounds, seconds, best AUC."""
    header = ["Q", "lr", "rounds to AUC ≥ 0.85", "s", "rounds to AUC ≥ 0.88", "s"]
    header += ["rounds to AUC ≥ 0.90", "s", "best AUC"]
    groups: dict[int, list[Setting]] = {}
    for setting in load(results / TABLE2):
        groups.setdefault(setting.overrides["protocol.local_steps"], []).append(setting)
    rows = []
    for steps, group in groups.items():
        best = fastest(group, 0.90)
        picks = [(best, "tuned")] + [(s, "shared") for s in group if _eta(s) == 0.1 and s != best]
        for setting, kind in picks:
            row = ["1 (FedSGD)" if steps == 1 else str(steps), f"{_eta(setting):g} ({kind})"]
            for target in (0.85, 0.88, 0.90):
                row.append(seeds_cell(*setting.reaching(target, "round")))
                row.append(seeds_cell(*setting.reaching(target, "wall_time")))
            rows.append([*row, _best(setting)])
    return markdown_grid(header, rows)


def adult_logistic(results: Path) -> str:
    """Rounds to AUC 0.85 and 0.88 and the best AUC per (K, schedule, Q)."""
    header = ["K", "schedule", "Q", "rounds to AUC ≥ 0.85", "rounds to AUC ≥ 0.88", "best AUC"]
    rows = []
    for setting in load(results / LOGISTIC):
        keys = ("partition.num_parties", "protocol.schedule", "protocol.local_steps")
        row = [str(setting.overrides[key]) for key in keys]
        row += [seeds_cell(*setting.reaching(target, "round")) for target in (0.85, 0.88)]
        rows.append([*row, _best(setting)])
    return markdown_grid(header, rows)


def adult_large_q(results: Path) -> str:
    """Per (Q, mu, step size): runs finished, best AUC, rounds to three targets."""
    header = ["Q", "μ", "lr", "runs finished", "best AUC (any evaluation)"]
    header += ["rounds to AUC ≥ 0.85", "rounds to AUC ≥ 0.88", "rounds to AUC ≥ 0.90"]
    rows = []
    for setting in load(results / LARGE_Q):
        over = setting.overrides
        finished = sum(run.finished for run in setting.runs)
        row = [str(over["protocol.local_steps"]), f"{over['protocol.proximal_mu']:g}"]
        row += [f"{over.get('train.optimizer.lr', 0.1):g}", f"{finished} of {len(setting.runs)}"]
        row.append(_best(setting))
        row += [seeds_cell(*setting.reaching(target, "round")) for target in (0.85, 0.88, 0.90)]
        rows.append(row)
    return markdown_grid(header, rows)


def _best(setting: Setting) -> str:
    values = [b for b in (run.best() for run in setting.runs) if b is not None]
    return seeds_cell(values, len(setting.runs), ".4f")


BLOCKS: dict[str, Callable[[Path], str]] = {
    "fedbcd-mnist-cnn-tuned": mnist_tuned,
    "fedbcd-mnist-cnn-grid": mnist_grid,
    "fedbcd-mnist-cnn-reduction": mnist_reduction,
    "fedbcd-adult-table2": adult_table2,
    "fedbcd-adult-lr": adult_logistic,
    "fedbcd-adult-large-q": adult_large_q,
}


def blocks(results: Path = RESULTS) -> dict[str, str]:
    """Every generated block of the doc, from the results under ``results``."""
    return render_blocks(BLOCKS, results)


IMG = DOC.parent / "img"


def figures(results: Path = RESULTS) -> dict[Path, Draw]:
    """The doc's figure: test AUC against rounds of every (schedule, Q) at its tuned eta0."""
    groups = _mnist_groups(load(results / MNIST))
    labels = [tuned(group).label for group in groups.values()]
    title = "FedBCD MNIST-CNN, party K, each at its tuned η0: mean ± 1 std over seeds"
    draw = partial(draw_sweep, results / MNIST, x="round", settings=labels, title=title)
    return {IMG / "fedbcd-mnist-auc-vs-round.png": draw}


def main() -> None:
    """Print one sweep's targets table, or rewrite (or check) the doc's tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path, nargs="?", help="sweep folder (holds sweep.json)")
    parser.add_argument("--targets", type=float, nargs="+", default=[0.85, 0.88, 0.9])
    add_doc_arguments(parser, DOC)
    args = parser.parse_args()
    if not args.doc:
        if args.sweep is None:
            parser.error("name a sweep folder, or give --doc")
        print(targets_table(args.sweep, args.targets))
        return
    print(rewrite_or_check(DOC, blocks(), check=args.check, command=COMMAND, figures=figures()))


if __name__ == "__main__":
    main()
