"""PNG plots of mean ± std curves: a metric against epochs, rounds, traffic or compute.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot, no global backend switch), so
plotting works without a display and leaves the caller's matplotlib state alone.

What the figures are for is comparing trained settings, so:

- the y range comes from the trained evaluations (epoch > 0, with their ±1 std bands); the
  untrained model (epoch 0) is still drawn, and when it lies outside that range a note on the
  axes says where (its line leaves the axes towards it);
- axis labels are wrapped to fit the figure, never cut;
- a logarithmic axis labels 1, 2 and 5 of every decade in plain numbers.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from vfl.experiments.aggregate import Curve

XAxis = Literal["epoch", "round", "megabytes", "gflops"]

METRIC_NAMES = {
    "test_accuracy": "test accuracy",
    "test_loss": "test loss (cross-entropy, nats)",
    "test_f1": "test F1 (positive class)",
    "test_auc": "test ROC-AUC",
    "train_loss": "training loss (cross-entropy, nats; mean over the epoch)",
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
Y_LABEL_WIDTH = 36
"""Characters per line of a y label: a 4.5-inch figure holds about 40 at its font size."""
MARGIN = 0.05
"""Space above and below the trained points, as a share of their range."""


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
    figure = draw_curves(curves, x=x, metric=metric, title=title, log_x=log_x)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    return path


def draw_curves(
    curves: Sequence[Curve], *, x: XAxis, metric: str, title: str, log_x: bool = False
) -> Figure:
    """The figure ``plot_curves`` saves (its arguments but the path)."""
    outside = len(curves) > INSIDE_LEGEND_MAX
    figure = Figure(figsize=(10.5 if outside else 7.5, 4.5), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    colours = colormaps["tab10"]
    drawn = 0
    for index, curve in enumerate(curves):
        xs = _xs(curve, x)
        keep = np.isfinite(xs) & np.isfinite(curve.mean) & ((xs > 0) if log_x else True)
        if keep.any():
            # after ten colours, the next ten settings repeat them with another line style
            style = LINE_STYLES[(index // colours.N) % len(LINE_STYLES)]
            _draw(axes, curve, xs, keep, colour=colours(index % colours.N), style=style)
            drawn += 1
    if drawn == 0:
        axes.text(0.5, 0.5, "no finished run recorded this metric", ha="center")
    if log_x:
        _log_axis(axes)
    if x == "epoch":
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    if drawn:
        _scale_to_trained(axes, curves, log_x=log_x, x=x)
    axes.set_xlabel(X_NAMES[x])
    axes.set_ylabel("\n".join(textwrap.wrap(METRIC_NAMES.get(metric, metric), Y_LABEL_WIDTH)))
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    if drawn:
        _legend(axes, outside)
    return figure


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


def _log_axis(axes: Axes) -> None:
    """A log x axis with 1, 2 and 5 of each decade labelled as plain numbers (0.5, 20, 500)."""
    axes.set_xscale("log")
    axes.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.xaxis.set_minor_formatter(NullFormatter())


def _scale_to_trained(axes: Axes, curves: Sequence[Curve], *, log_x: bool, x: XAxis) -> None:
    """Set the y range from the trained points; note where untrained points outside it are."""
    trained: list[np.ndarray] = []
    untrained: list[np.ndarray] = []
    for curve in curves:
        xs = _xs(curve, x)
        shown = np.isfinite(xs) & np.isfinite(curve.mean) & ((xs > 0) if log_x else True)
        late = shown & (curve.epochs > 0)
        std = curve.std if curve.num_runs > 1 else np.zeros_like(curve.mean)
        trained += [curve.mean[late] - std[late], curve.mean[late] + std[late]]
        untrained.append(curve.mean[shown & (curve.epochs <= 0)])
    values = np.concatenate(trained)
    values = values[np.isfinite(values)]
    if not len(values):
        return
    low, high = float(values.min()), float(values.max())
    pad = MARGIN * (high - low) if high > low else max(abs(high) * 0.01, 0.01)
    axes.set_ylim(low - pad, high + pad)
    early = np.concatenate(untrained)
    outside = early[(early < low - pad) | (early > high + pad)]
    if len(outside):
        below = bool(outside.mean() < low)
        where = "below" if below else "above"
        span = (
            f"{outside.min():.3g}"
            if len(set(outside.round(3))) == 1
            else (f"{outside.min():.3g} to {outside.max():.3g}")
        )
        axes.text(  # at the right, away from the lines that leave the axes at epoch 0
            0.99,
            0.02 if below else 0.98,
            f"{'↓' if below else '↑'} epoch 0 (untrained): {span}, {where} the axis",
            transform=axes.transAxes,
            ha="right",
            va="bottom" if below else "top",
            fontsize="small",
            color="0.35",
        )


def _xs(curve: Curve, x: XAxis) -> np.ndarray:
    return {
        "epoch": curve.epochs,
        "round": curve.rounds,
        "megabytes": curve.megabytes,
        "gflops": curve.gflops,
    }[x]


def _legend(axes: Axes, outside: bool) -> None:
    if not outside:
        axes.legend(fontsize="small", loc="best")
    else:
        axes.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
