"""What the curve plots show: the scale of trained points, labels inside the figure, log ticks."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.text import Text

from vfl.experiments.aggregate import Curve
from vfl.experiments.plots import METRIC_NAMES, X_NAMES, XAxis, draw_curves


def curve(values: list[float], *, label: str = "a", megabytes: float = 60.0) -> Curve:
    """Evaluations at epochs 0, 1, ... (epoch 0 untrained, no traffic), two runs."""
    epochs = np.arange(len(values), dtype=float)
    return Curve(
        label=label,
        epochs=epochs,
        megabytes=epochs * megabytes,
        mean=np.array(values),
        std=np.full(len(values), 0.002),
        num_runs=2,
        rounds=epochs * 10,
        gflops=epochs * 3.0,
    )


def notes(figure: object) -> list[str]:
    axes = figure.axes[0]  # type: ignore[attr-defined]
    return [text.get_text() for text in axes.texts]


def test_the_y_range_comes_from_trained_points_and_epoch_0_is_noted() -> None:
    # Prepare: accuracies of 0.90-0.97 after training, 0.10 untrained
    curves = [curve([0.10, 0.90, 0.95, 0.97]), curve([0.11, 0.92, 0.96, 0.965], label="b")]

    # Execute
    figure = draw_curves(curves, x="epoch", metric="test_accuracy", title="t")

    # Assert: the trained points fill the axes; the untrained ones are named, below it
    low, high = figure.axes[0].get_ylim()
    assert 0.85 < low < 0.90 and 0.97 < high < 0.98
    assert notes(figure) == ["↓ epoch 0 (untrained): 0.1 to 0.11, below the axis"]
    assert len(figure.axes[0].lines) == 2
    assert np.asarray(figure.axes[0].lines[0].get_xdata()).tolist() == [0, 1, 2, 3]  # epoch 0 drawn


def test_a_loss_that_starts_higher_is_noted_above() -> None:
    # Execute
    figure = draw_curves([curve([2.3, 0.40, 0.30, 0.25])], x="epoch", metric="test_loss", title="t")

    # Assert
    assert figure.axes[0].get_ylim()[1] < 0.5
    assert notes(figure) == ["↑ epoch 0 (untrained): 2.3, above the axis"]


def test_an_untrained_point_inside_the_range_needs_no_note() -> None:
    # Prepare: the control: epoch 0 is within the trained points' range
    curves = [curve([0.5, 0.2, 0.6, 0.7])]

    # Execute
    figure = draw_curves(curves, x="epoch", metric="test_accuracy", title="t")

    # Assert
    low, high = figure.axes[0].get_ylim()
    assert low < 0.5 < high and notes(figure) == []


LONG = "training loss (cross-entropy, nats; running mean over the epoch, as the old label had it)"


@pytest.mark.parametrize("metric", [*METRIC_NAMES, LONG])
@pytest.mark.parametrize("x", list(X_NAMES))
def test_no_label_or_title_is_cut_by_the_figure_s_edge(metric: str, x: XAxis) -> None:
    # Prepare
    curves = [curve([0.1, 0.9, 0.95], label=f"setting {i}") for i in range(8)]
    figure = draw_curves(curves, x=x, metric=metric, title="a sweep: mean ± 1 std over seeds")
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    figure.draw(renderer)
    axes = figure.axes[0]

    # Execute
    texts: list[Text] = [axes.xaxis.label, axes.yaxis.label, axes.title]

    # Assert: every text lies inside the figure, whole
    box = figure.bbox
    for text in texts:
        extent = text.get_window_extent(renderer)
        assert text.get_text()
        inside = extent.x0 >= box.x0 and extent.y0 >= box.y0
        inside = inside and extent.x1 <= box.x1 and extent.y1 <= box.y1
        assert inside, (text.get_text(), extent, box)


def test_a_log_axis_labels_plain_numbers_in_every_decade() -> None:
    # Prepare: traffic from 6 to 600 MB
    curves = [curve([0.1, 0.9, 0.93, 0.95], megabytes=6.0), curve([0.1, 0.9, 0.95], megabytes=200)]

    # Execute
    figure = draw_curves(curves, x="megabytes", metric="test_accuracy", title="t", log_x=True)
    figure.draw(figure.canvas.get_renderer())  # type: ignore[attr-defined]

    # Assert
    low, high = figure.axes[0].get_xlim()
    shown = [
        tick.label1.get_text()
        for tick in figure.axes[0].xaxis.get_major_ticks()
        if low <= tick.get_loc() <= high
    ]
    assert shown == ["5", "10", "20", "50", "100", "200"]
