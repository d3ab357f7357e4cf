"""PNG plots of mean ± std curves: a metric against epochs, rounds, traffic or compute.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot, no global backend switch), so
plotting works without a display and leaves the caller's matplotlib state alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from vfl.experiments.aggregate import Curve

XAxis = Literal["epoch", "round", "megabytes", "gflops"]

METRIC_NAMES = {
    "test_accuracy": "test accuracy",
    "test_loss": "test loss (cross-entropy, nats)",
    "test_f1": "test F1 (positive class)",
    "test_auc": "test ROC-AUC",
    "train_loss": "training loss (cross-entropy, nats; running mean over the epoch)",
}
X_NAMES = {
    "epoch": "epoch",
    "round": "round",
    "megabytes": "training traffic, up + down (MB = 2^20 bytes)",
    "gflops": "bottom-model training compute, all parties (GFLOPs)",
}
LINE_STYLES = ("-", "--", ":", "-.")
INSIDE_LEGEND_MAX = 6
"""Legends with more entries go outside the axes, to the right."""


def plot_curves(
    curves: Sequence[Curve],
    path: Path,
    *,
    x: XAxis,
    metric: str,
    title: str,
    log_x: bool = False,
) -> Path:
    """Draw one line per curve with a shaded ±1 std band (when it averages several runs).

    Args:
        curves: One curve per setting (``vfl.experiments.aggregate.mean_curve``).
        path: The PNG file to write.
        x: ``epoch``, ``round``, ``megabytes`` of cumulative training traffic, or ``gflops`` of
            cumulative bottom-model training compute (means over the curve's runs).
        metric: The metric the curves hold (for the axis label).
        title: The figure title.
        log_x: Logarithmic x axis; points at x <= 0 (epoch 0's zero traffic) are left out.

    Returns:
        ``path``.
    """
    outside = len(curves) > INSIDE_LEGEND_MAX
    figure = Figure(figsize=(10.5 if outside else 7.5, 4.5), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    colours = colormaps["tab10"]
    drawn = 0
    for index, curve in enumerate(curves):
        xs = {
            "epoch": curve.epochs,
            "round": curve.rounds,
            "megabytes": curve.megabytes,
            "gflops": curve.gflops,
        }[x]
        keep = np.isfinite(xs) & np.isfinite(curve.mean) & ((xs > 0) if log_x else True)
        if keep.any():
            # after ten colours, the next ten settings repeat them with another line style
            style = LINE_STYLES[(index // colours.N) % len(LINE_STYLES)]
            _draw(axes, curve, xs, keep, colour=colours(index % colours.N), style=style)
            drawn += 1
    if drawn == 0:
        axes.text(0.5, 0.5, "no finished run recorded this metric", ha="center")
    if log_x:
        axes.set_xscale("log")
    if x == "epoch":
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel(X_NAMES[x])
    axes.set_ylabel(METRIC_NAMES.get(metric, metric))
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    if drawn:
        _legend(axes, outside)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    return path


def _draw(
    axes: Axes, curve: Curve, xs: np.ndarray, keep: np.ndarray, *, colour: object, style: str
) -> None:
    label = curve.label if curve.num_runs <= 1 else f"{curve.label} (n={curve.num_runs})"
    marker = "o" if keep.sum() <= 30 else None
    axes.plot(
        xs[keep], curve.mean[keep], style, color=colour, marker=marker, markersize=3, label=label
    )
    if curve.num_runs > 1:
        low, high = curve.mean - curve.std, curve.mean + curve.std
        axes.fill_between(xs[keep], low[keep], high[keep], color=colour, alpha=0.2, linewidth=0)


def _legend(axes: Axes, outside: bool) -> None:
    if not outside:
        axes.legend(fontsize="small", loc="best")
    else:
        axes.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
