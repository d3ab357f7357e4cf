"""The tables and figures of ``docs/attacks.md``, from the committed sweep results alone.

Reads every finished run under ``experiments/attacks/results`` (``summary.json`` and the resolved
``config.toml``; no checkpoint, no training) and

- rewrites the tables between the ``attack-tables`` markers of ``docs/attacks.md``;
- draws ``docs/img/attacks-*.png`` (and the reconstructed quadrants from
  ``results/quadrants.json``, written by ``quadrants.py``).

Every number is the final epoch's, as mean ± population std (ddof 0) over the finished seeds::

    .venv/bin/python experiments/attacks/report.py           # tables and figures
    .venv/bin/python experiments/attacks/report.py --check   # exit 1 if the doc's tables are stale
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS = HERE / "results"
DOC = ROOT / "docs/attacks.md"
IMG = ROOT / "docs/img"
START, END = "<!-- attack-tables:start -->\n", "<!-- attack-tables:end -->"
SWEEPS = ("label-inference", "label-inference-adult", "completion", "reconstruction")
NEAR_CHANCE = 0.55
"""An attacker's AUC below this, as a mean over seeds, counts as having reached chance."""


@dataclass(frozen=True)
class Setting:
    """One setting of a sweep and its finished runs.

    Attributes:
        label: The sweep's label of the setting.
        planned: How many seeds the sweep plans for it.
        finals: Each finished run's final metrics (``summary.json``'s ``final``).
        privacy: Each finished run's ``privacy`` section (epsilons, what each covers, how each
            was computed), or empty.
        firsts: Each finished run's record of its first epoch (``metrics.jsonl``).
        config: The first finished run's resolved config (all runs differ only in the seed).
    """

    label: str
    planned: int
    finals: tuple[dict[str, Any], ...]
    privacy: tuple[dict[str, Any], ...]
    firsts: tuple[dict[str, Any], ...]
    config: dict[str, Any]

    def values(self, key: str) -> list[float]:
        """``key`` of every finished run that has it (``first:KEY``: at the first epoch)."""
        records = self.finals
        if key.startswith("first:"):
            key, records = key.removeprefix("first:"), self.firsts
        return [float(f[key]) for f in records if isinstance(f.get(key), int | float)]

    def mean(self, key: str) -> float:
        """The mean of ``key`` over the finished runs (NaN for none)."""
        values = self.values(key)
        return statistics.fmean(values) if values else math.nan

    def std(self, key: str) -> float:
        """The population std of ``key`` over the finished runs (NaN for none)."""
        values = self.values(key)
        return statistics.pstdev(values) if values else math.nan

    def epsilon(self, key: str) -> float | None:
        """The mean of a privacy figure (``epsilon``, ``label_epsilon``), None without one."""
        values = [float(p[key]) for p in self.privacy if key in p]
        return statistics.fmean(values) if values else None


def load_sweep(folder: Path) -> list[Setting]:
    """The settings of the sweep in ``folder`` (``sweep.json`` order), with their finished runs."""
    manifest = json.loads((folder / "sweep.json").read_text())
    settings = []
    for entry in manifest["settings"]:
        finished = [
            folder / run["dir"]
            for run in entry["runs"]
            if (folder / run["dir"] / "summary.json").exists()
        ]
        summaries = [json.loads((run / "summary.json").read_text()) for run in finished]
        firsts = [_first_epoch(run / "metrics.jsonl") for run in finished]
        config = tomllib.loads((finished[0] / "config.toml").read_text()) if finished else {}
        settings.append(
            Setting(
                entry["label"],
                len(entry["runs"]),
                tuple(s["final"] for s in summaries),
                tuple(s.get("privacy", {}) for s in summaries),
                tuple(firsts),
                config,
            )
        )
    return settings


def _first_epoch(metrics: Path) -> dict[str, Any]:
    """The record of epoch 1 in a run's ``metrics.jsonl``."""
    for line in metrics.read_text().splitlines():
        record: dict[str, Any] = json.loads(line)
        if record.get("epoch") == 1:
            return record
    return {}


def cell(setting: Setting, key: str, digits: int = 3) -> str:
    """``mean ± std`` of ``key``, or a dash."""
    if not setting.values(key):
        return "–"
    return f"{setting.mean(key):.{digits}f} ± {setting.std(key):.{digits}f}"


def auc_cell(setting: Setting, key: str) -> str:
    """The attacker's AUC (its better sign), ``mean ± std``, and the sign it read it with.

    ``+``: larger scores mean positive; ``−``: the negated score; ``±``: the seeds differ.
    """
    if not setting.values(key):
        return "–"
    signs = set(setting.values(key.replace("_auc", "_sign")))
    sign = {frozenset({1.0}): "+", frozenset({-1.0}): "−"}.get(frozenset(signs), "±")
    return f"{cell(setting, key)} ({sign})"


def reading(setting: Setting) -> str:
    """What the best label-inference score (final or after epoch 1) means.

    The thresholds of ``vfl.attacks.reading``, on the mean over seeds.
    """
    scores = ("attack_direction_auc", "first:attack_direction_auc", "attack_norm_auc")
    best = round(max((setting.mean(k) for k in scores if setting.values(k)), default=math.nan), 3)
    if math.isnan(best):
        return "–"
    if best >= 0.95:
        return "**near certain**"
    if best >= 0.60:
        return "leaks"
    return "weak leak" if best >= NEAR_CHANCE else "near chance"


def epsilon_cell(setting: Setting, key: str) -> str:
    """An epsilon (identical over seeds), or a dash where the setting spends none."""
    value = setting.epsilon(key)
    return "–" if value is None else f"{value:.3g}"


def seeds_cell(setting: Setting) -> str:
    """Finished seeds, and the plan where some are missing."""
    done = len(setting.finals)
    return str(done) if done == setting.planned else f"{done} of {setting.planned} (missing)"


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _pooled(settings: Sequence[Setting], key: str) -> float:
    values = [v for s in settings for v in s.values(key)]
    return statistics.fmean(values) if values else math.nan


def label_inference_table(settings: Sequence[Setting]) -> str:
    """Label inference by passive party 1: attacker-oriented AUCs beside every epsilon."""
    header = (
        "protection",
        "seeds",
        "test accuracy",
        "direction AUC (sign)",
        "direction AUC, epoch 1",
        "norm AUC (sign)",
        "attack reads",
        "ε features (PBM): server",
        "ε features: any coalition",
        "ε labels (noise): any coalition",
    )
    rows = [
        (
            s.label,
            seeds_cell(s),
            cell(s, "test_accuracy"),
            auc_cell(s, "attack_direction_auc"),
            auc_cell(s, "first:attack_direction_auc"),
            auc_cell(s, "attack_norm_auc"),
            reading(s),
            epsilon_cell(s, "epsilon"),
            epsilon_cell(s, "epsilon_coalition"),
            epsilon_cell(s, "label_epsilon"),
        )
        for s in settings
    ]
    rows.append(("*random guess*", "", "", "0.500", "0.500", "0.500", "", "", "", ""))
    return markdown(header, rows)


def chance_table(sweeps: dict[str, Sequence[Setting]]) -> str:
    """The smallest gradient noise z from which each attack stays near chance, per data set."""
    scores = (
        ("direction, final epoch", "attack_direction_auc"),
        ("direction, epoch 1", "first:attack_direction_auc"),
        ("norm, final epoch", "attack_norm_auc"),
    )
    header = ("data set", *(name for name, _ in scores))
    rows = []
    for title, settings in sweeps.items():
        noised = sorted(
            (z, s) for s in settings if (z := _noise_multiplier(s)) is not None and s.finals
        )
        undefended = next((s for s in settings if s.label == "undefended"), None)
        if not noised:
            rows.append((title, *("no noise runs finished" for _ in scores)))
            continue
        cells = []
        for _, key in scores:
            chance = [z for i, (z, _) in enumerate(noised) if _stays_near_chance(noised[i:], key)]
            start = f"{undefended.mean(key):.3f}" if undefended is not None else "–"
            found = (
                f"z = {chance[0]:g} ({_setting(noised, chance[0]).mean(key):.3f}; undefended"
                f" {start})"
                if chance
                else f"not reached up to z = {noised[-1][0]:g} (undefended {start})"
            )
            cells.append("near chance undefended" if _near_chance(undefended, key) else found)
        rows.append((title, *cells))
    return markdown(header, rows)


def _noise_multiplier(setting: Setting) -> float | None:
    noise = setting.config.get("privacy", {}).get("gradient_noise", {})
    z = float(noise.get("noise_multiplier", 0.0))
    return z if z > 0 else None


def _near_chance(setting: Setting | None, key: str) -> bool:
    """Below the threshold as the tables print it (three decimals)."""
    return setting is not None and round(setting.mean(key), 3) < NEAR_CHANCE


def _stays_near_chance(noised: Sequence[tuple[float, Setting]], key: str) -> bool:
    return all(_near_chance(s, key) for _, s in noised)


def _setting(noised: Sequence[tuple[float, Setting]], z: float) -> Setting:
    return next(s for x, s in noised if x == z)


def completion_table(settings: Sequence[Setting]) -> str:
    """Model completion by passive party 1 on 10-class MNIST halves, 40 known labels."""
    header = (
        "protection",
        "seeds",
        "test accuracy",
        "completion accuracy",
        "ε features (PBM): server",
        "ε features: any coalition",
        "ε labels (noise): any coalition",
    )
    rows = [
        (
            s.label,
            seeds_cell(s),
            cell(s, "test_accuracy"),
            cell(s, "attack_accuracy"),
            epsilon_cell(s, "epsilon"),
            epsilon_cell(s, "epsilon_coalition"),
            epsilon_cell(s, "label_epsilon"),
        )
        for s in settings
    ]
    prior = _pooled(settings, "attack_accuracy_prior")
    rows.append(("*majority class*", "", "", f"{prior:.3f}", "", "", ""))
    return markdown(header, rows)


def reconstruction_table(settings: Sequence[Setting]) -> str:
    """Reconstruction of party 1's MNIST quadrant by the server, 20 % auxiliary rows."""
    header = ("protection", "seeds", "ε features (PBM)", "test accuracy", "MSE", "SSIM")
    rows = [
        (
            _reconstruction_label(s),
            seeds_cell(s),
            epsilon_cell(s, "epsilon"),
            cell(s, "test_accuracy"),
            cell(s, "attack_mse", 4),
            cell(s, "attack_ssim"),
        )
        for s in settings
    ]
    mse, ssim = _pooled(settings, "attack_mse_prior"), _pooled(settings, "attack_ssim_prior")
    rows.append(("*random guess (auxiliary mean)*", "", "", "", f"{mse:.4f}", f"{ssim:.3f}"))
    return markdown(header, rows)


def _reconstruction_label(setting: Setting) -> str:
    if setting.label.startswith("beta="):  # the PBM grid, counts sent in the clear
        return f"PBM {setting.label} (no secure sum)"
    return setting.label


TABLES: dict[str, tuple[str, Callable[[Sequence[Setting]], str]]] = {
    "label-inference": ("Label inference (binary MNIST halves)", label_inference_table),
    "label-inference-adult": ("Label inference (Adult, three parties)", label_inference_table),
    "completion": ("Model completion (MNIST halves, 40 labels)", completion_table),
    "reconstruction": ("Feature reconstruction (MNIST quadrants)", reconstruction_table),
}
CHANCE = {"label-inference": "binary MNIST", "label-inference-adult": "Adult"}
"""The label-inference sweeps the noise-to-chance table reads, by the data set's name."""


def tables(results: Path = RESULTS) -> str:
    """Every table, with a line naming what did not finish and how its epsilons were made."""
    parts = []
    loaded: dict[str, Sequence[Setting]] = {}
    for sweep, (title, make) in TABLES.items():
        folder = results / sweep
        if not (folder / "sweep.json").exists():
            parts.append(f"#### {title}\n\nNot run yet: no results in `{folder.name}`.\n")
            continue
        settings = loaded[sweep] = load_sweep(folder)
        missing = sum(s.planned - len(s.finals) for s in settings)
        note = f"\n\nMissing: {missing} runs did not finish (marked above).\n" if missing else "\n"
        parts.append(f"#### {title}\n\n{make(settings)}{note}{accounting_note(settings)}")
    found = {name: loaded[sweep] for sweep, name in CHANCE.items() if sweep in loaded}
    if found:
        title = f"Gradient noise from which each attack stays near chance (AUC < {NEAR_CHANCE})"
        parts.append(f"#### {title}\n\n{chance_table(found)}\n")
    if found and (results / SHARING).is_dir():
        title = "Each party's own noise draw (vfl, the runs above) or one shared noised row"
        parts.append(f"#### {title}\n\n{sharing_table(loaded, results / SHARING)}\n")
    return "\n".join(parts)


SHARING = "noise-sharing"
"""Runs of the design vfl did not choose: one noised row shared by every party."""
PARTIES = {
    "label-inference": ("binary MNIST", "binary_mnist"),
    "label-inference-adult": ("Adult", "adult"),
}


def sharing_table(loaded: dict[str, Sequence[Setting]], folder: Path) -> str:
    """The gradient noise's runs beside the same runs with one noised row shared by all parties.

    Own draws: the label-inference sweeps' noise settings (what vfl does); their epsilon
    against a coalition counts one release per party and epoch. Shared: ``noise-sharing/``
    holds ``shared-<data>-z<z>__seed<s>`` runs of the same configs made with a shared row,
    whose epsilon against any coalition is one release per epoch.
    """
    header = (
        "data set",
        "z",
        "test accuracy: own / shared",
        "direction AUC: own / shared",
        "direction AUC, epoch 1: own / shared",
        "norm AUC: own / shared",
        "ε labels, any coalition: own / shared",
    )
    rows = []
    for sweep, (name, stem) in PARTIES.items():
        for setting in loaded.get(sweep, ()):
            z = _noise_multiplier(setting)
            if z is None:
                continue
            shared = load_runs(sorted(folder.glob(f"shared-{stem}-z{z:g}__seed*")), f"z={z:g}")
            rows.append(
                (
                    name,
                    f"{z:g}",
                    _pair(setting, shared, "test_accuracy"),
                    _pair(setting, shared, "attack_direction_auc"),
                    _pair(setting, shared, "first:attack_direction_auc"),
                    _pair(setting, shared, "attack_norm_auc"),
                    f"{epsilon_cell(setting, 'label_epsilon')} /"
                    f" {epsilon_cell(shared, 'label_epsilon')}",
                )
            )
    return markdown(header, rows)


def load_runs(runs: Sequence[Path], label: str) -> Setting:
    """Finished runs outside a sweep, as one setting."""
    summaries = [json.loads((run / "summary.json").read_text()) for run in runs]
    return Setting(
        label,
        len(runs),
        tuple(s["final"] for s in summaries),
        tuple(s.get("privacy", {}) for s in summaries),
        tuple(_first_epoch(run / "metrics.jsonl") for run in runs),
        {},
    )


def _pair(own: Setting, shared: Setting, key: str) -> str:
    return f"{cell(own, key)} / {cell(shared, key)}"


def accounting_note(settings: Sequence[Setting]) -> str:
    """How the table's epsilons were computed, as the runs' summaries state it."""
    ways: dict[str, set[str]] = {}
    for setting in settings:
        for privacy in setting.privacy:
            for key in ("epsilon", "label_epsilon"):
                if key in privacy:
                    how = privacy.get("accounting", {}).get(key, OLD_ACCOUNTING[key])
                    ways.setdefault(key, set()).add(how)
    lines = [f"{NAMES[key]}: {'; '.join(sorted(how))}." for key, how in sorted(ways.items())]
    return "".join(f"\n{line}\n" for line in lines)


NAMES = {"epsilon": "ε features (PBM)", "label_epsilon": "ε labels (gradient noise)"}
OLD_ACCOUNTING = {
    "epsilon": "vfl's exact RDP, converted by Mironov 2017 (Proposition 3): runs made before the"
    " tighter conversion (issue 28), whose summaries name no conversion",
    "label_epsilon": "RDP converted by Mironov 2017, one release per sample and epoch: runs"
    " made before issue 28",
}


def rewrite_doc(doc: Path = DOC, results: Path = RESULTS) -> bool:
    """Put ``tables()`` between the doc's markers; whether the doc changed."""
    text = doc.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    updated = head + START + tables(results) + END + tail
    if updated != text:
        doc.write_text(updated)
    return updated != text


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite the tables (or check them) and draw the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the doc's tables")
    args = parser.parse_args(argv)
    if args.check:
        current = DOC.read_text().split(START, 1)[1].split(END, 1)[0]
        if current != tables():
            print("docs/attacks.md's tables are stale: run experiments/attacks/report.py")
            return 1
        return 0
    rewrite_doc()
    sys.path.insert(0, str(HERE))
    import figures  # deferred: matplotlib is needed only to draw

    figures.draw_all(RESULTS, IMG)
    return 0


if __name__ == "__main__":
    sys.exit(main())
