"""Write a sweep's or a run's reports (CSV, Markdown, PNG) from its result files alone."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vfl.errors import ConfigError
from vfl.experiments.aggregate import (
    Curve,
    RunResult,
    load_runs,
    mean_curve,
    run_row,
    setting_row,
)
from vfl.experiments.files import MANIFEST, METRICS, read_manifest, read_metrics
from vfl.experiments.plots import XAxis, plot_curves
from vfl.experiments.tables import markdown_table, setting_records, write_csv
from vfl.results.summary import Target

RESULTS = "results.csv"


def redraw(path: Path, *, metric: str | None = None, log_x: bool | None = None) -> list[Path]:
    """Rewrite the reports of a sweep folder or the plots of a run directory.

    Raises:
        ConfigError: if ``path`` is neither, or no run recorded ``metric``.
    """
    if (path / MANIFEST).exists():
        return write_sweep_report(path, metric=metric, log_x=log_x)
    if (path / METRICS).exists():
        return write_run_plots(path, metric=metric or "test_accuracy", log_x=bool(log_x))
    raise ConfigError(
        f"{str(path)!r} is neither a sweep folder (with {MANIFEST}) nor a run directory"
        f" (with {METRICS})"
    )


def write_sweep_report(
    folder: Path, *, metric: str | None = None, log_x: bool | None = None
) -> list[Path]:
    """``results.csv``, the tables and the plots of a sweep folder, from its files alone.

    Args:
        folder: The sweep folder (holds ``sweep.json``).
        metric: The metric of tables and plots (default: the sweep's report metric). Tables for
            another metric go to ``table_<metric>.md`` / ``.csv``.
        log_x: Logarithmic traffic axis (default: the sweep's ``[report] log_x``).

    Returns:
        The files written.
    """
    manifest = read_manifest(folder)
    metric = metric or manifest.metric
    target = Target(*manifest.target) if manifest.target is not None else None
    grouped = load_runs(folder, manifest)
    runs = [run for group in grouped.values() for run in group]
    _check_metric(runs, metric)
    written = [write_csv(folder / RESULTS, [run_row(run, target=target) for run in runs])]
    rows = [
        setting_row(label, group, metric=metric, target=target) for label, group in grouped.items()
    ]
    stem = "table" if metric == manifest.metric else f"table_{metric}"
    table = markdown_table(rows, title=f"{manifest.name}: {metric}", metric=metric, target=target)
    (folder / f"{stem}.md").write_text(table)
    columns = {
        s.label: {k: s.overrides.get(k) for k in manifest.label_keys} for s in manifest.settings
    }
    records = setting_records(rows, metric=metric, columns=columns)
    written += [folder / f"{stem}.md", write_csv(folder / f"{stem}.csv", records)]
    curves = [mean_curve(label, group, metric) for label, group in grouped.items() if group]
    log = manifest.log_x if log_x is None else log_x
    title = f"{manifest.name}: mean ± 1 std over seeds"
    return written + plot_both(curves, folder, metric=metric, title=title, log_x=log)


def draw_sweep(
    folder: Path,
    path: Path,
    *,
    x: XAxis,
    metric: str | None = None,
    log_x: bool | None = None,
    settings: Sequence[str] | None = None,
    title: str | None = None,
) -> Path:
    """One figure of a sweep folder (its mean ± std curves against ``x``) written to ``path``.

    With the defaults it is the figure ``vfl plot`` draws into the folder; a reproduction's
    document draws its figures this way from committed results.

    Args:
        folder: The sweep folder (holds ``sweep.json``).
        path: The PNG file to write.
        x: ``epoch``, ``round``, ``megabytes`` or ``gflops``.
        metric: The metric (default: the sweep's report metric).
        log_x: Logarithmic x axis (default: the sweep's ``[report] log_x``).
        settings: The setting labels to draw, in this order (default: every setting).
        title: The title (default: the one ``vfl plot`` gives).

    Raises:
        ConfigError: ``settings`` names a label the sweep does not have.
    """
    manifest = read_manifest(folder)
    metric = metric or manifest.metric
    grouped = load_runs(folder, manifest)
    labels = list(grouped) if settings is None else list(settings)
    unknown = [label for label in labels if label not in grouped]
    if unknown:
        raise ConfigError(f"{folder}: no setting {unknown[0]!r}; settings: {list(grouped)}")
    curves = [mean_curve(label, grouped[label], metric) for label in labels if grouped[label]]
    log = manifest.log_x if log_x is None else log_x
    heading = title or f"{manifest.name}: mean ± 1 std over seeds"
    return plot_curves(
        curves, path, x=x, metric=metric, title=heading, log_x=log and x == "megabytes"
    )


def write_run_plots(
    run_dir: Path, *, metric: str = "test_accuracy", log_x: bool = False
) -> list[Path]:
    """The metric of one run (finished or not) against epochs and against traffic."""
    run = RunResult(run_dir.name, -1, run_dir, tuple(read_metrics(run_dir)))
    _check_metric([run], metric)
    curve = mean_curve(run_dir.name, [run], metric)
    return plot_both([curve], run_dir, metric=metric, title=run_dir.name, log_x=log_x)


def plot_both(
    curves: Sequence[Curve], folder: Path, *, metric: str, title: str, log_x: bool
) -> list[Path]:
    """The metric's curves against epochs, rounds and traffic (and compute) in ``folder``.

    ``<metric>_vs_epoch.png``, ``<metric>_vs_round.png``, ``<metric>_vs_mb.png``, and
    ``<metric>_vs_gflops.png`` when the runs recorded bottom-model FLOPs.
    """
    paths = [
        plot_curves(curves, folder / f"{metric}_vs_{x}.png", x=x, metric=metric, title=title)
        for x in ("epoch", "round")
    ]
    paths.append(
        plot_curves(
            curves,
            folder / f"{metric}_vs_mb.png",
            x="megabytes",
            metric=metric,
            title=title,
            log_x=log_x,
        )
    )
    if any(np.isfinite(curve.gflops).any() for curve in curves):
        paths.append(
            plot_curves(
                curves, folder / f"{metric}_vs_gflops.png", x="gflops", metric=metric, title=title
            )
        )
    return paths


def _check_metric(runs: Sequence[RunResult], metric: str) -> None:
    recorded = {key for run in runs for record in run.records for key in record}
    if runs and metric not in recorded:
        names = sorted(k for k in recorded if k.startswith(("test_", "train_loss")))
        raise ConfigError(f"metric {metric!r} is not in the runs' {METRICS}; recorded: {names}")
