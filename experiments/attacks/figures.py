"""The figures of ``docs/attacks.md``, drawn from the committed results (``report.py`` calls it).

Attack success against the protection's knob (ε, bits, noise, sparsity), mean ± std over seeds,
with the main-task accuracy on the right axis, the undefended attack and a random guess as
reference lines; and a picture of reconstructed quadrants.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from report import Setting, load_sweep

Knob = Callable[[Setting], float | None]


def _section(setting: Setting, *keys: str) -> Any:
    value: Any = setting.config
    for key in keys:
        value = value[key]
    return value


def _undefended(settings: Sequence[Setting]) -> Setting:
    return next(s for s in settings if s.label == "undefended")


def _series(
    axes: Axes,
    settings: Sequence[Setting],
    knob: Knob,
    metric: str,
    *,
    label: str,
    style: str = "o-",
    color: str | None = None,
) -> None:
    """``metric`` (mean ± std) against ``knob`` for the settings whose knob is defined."""
    points = sorted((x, s) for s in settings if s.values(metric) and (x := knob(s)) is not None)
    if not points:
        return
    xs = [x for x, _ in points]
    axes.errorbar(
        xs,
        [s.mean(metric) for _, s in points],
        yerr=[s.std(metric) for _, s in points],
        fmt=style,
        capsize=3,
        label=label,
        color=color,
    )


def _accuracy(axes: Axes, settings: Sequence[Setting], knob: Knob, label: str = "") -> Axes:
    twin = axes.twinx()
    _series(
        twin,
        settings,
        knob,
        "test_accuracy",
        label=label or "test accuracy",
        style="s--",
        color="tab:gray",
    )
    twin.set_ylabel("main-task test accuracy", color="tab:gray")
    return twin


def _references(axes: Axes, undefended: float, guess: float, name: str) -> None:
    axes.axhline(undefended, color="tab:red", linestyle=":", label=f"undefended {name}")
    axes.axhline(guess, color="black", linestyle=":", label="random guess")


def _noise(s: Setting) -> float | None:
    z = float(_section(s, "privacy", "gradient_noise", "noise_multiplier"))
    return s.epsilon("label_epsilon") if z > 0 else None


def _pbm(s: Setting, beta: float | None = None, secure: str = "off") -> float | None:
    privacy = _section(s, "privacy")
    if privacy["mechanism"] != "pbm" or (beta is not None and privacy["beta"] != beta):
        return None
    if secure == "off" and privacy["secure_aggregation"] == "on":
        return None
    return s.epsilon("epsilon")


def _bits(name: str, link: str = "gradient") -> Knob:
    def knob(s: Setting) -> float | None:
        compressor = _section(s, "compress", link)
        return float(compressor["bits"]) if compressor["name"] == name else None

    return knob


def _lvfl(s: Setting) -> float | None:
    beta = _section(s, "lightweight", "beta")
    if float(beta["value"]) > 0 or s.label == "undefended":
        return float(beta["value"])
    return None


def label_inference(
    settings: Sequence[Setting], out: Path, data: str = "binary MNIST halves"
) -> None:
    """The attacker's AUCs (direction and norm) against each protection's knob, accuracy beside."""
    figure, grid = plt.subplots(2, 2, figsize=(14, 9))
    panels = grid.flatten()
    undefended = _undefended(settings).mean("attack_direction_auc")
    knobs: list[tuple[str, str, list[tuple[str, Knob]]]] = [
        ("Gaussian gradient noise", "ε of the labels (log)", [("", _noise)]),
        ("PBM of the embeddings", "ε of the features (log)", [("", _pbm)]),
        (
            "gradient compression",
            "bits per component b",
            [(f"{n}, ", _bits(n)) for n in ("scalar", "lattice", "topk")],
        ),
        ("LVFL upload sparsification", "sparsity β", [("", _lvfl)]),
    ]
    for axes, (title, xlabel, series) in zip(panels, knobs, strict=True):
        for name, knob in series:
            metric = "attack_direction_auc"
            _series(axes, settings, knob, metric, label=f"{name}direction AUC")
            first = f"{name}direction, epoch 1"
            _series(axes, settings, knob, f"first:{metric}", label=first, style="^:")
            _series(axes, settings, knob, "attack_norm_auc", label=f"{name}norm AUC", style="v--")
        _references(axes, undefended, 0.5, "direction AUC")
        twin = _accuracy(axes, settings, series[0][1])
        if "log" in xlabel:
            axes.set_xscale("log")
        axes.set(
            title=title,
            xlabel=xlabel,
            ylabel="attacker's AUC (better sign)",
            ylim=(0.45, 1.02),
        )
        twin.set_ylim(0.5, 1.0)
        axes.legend(fontsize=7, loc="lower left")
    figure.suptitle(f"Label inference by passive party 1, {data} (final epoch)")
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)


def reconstruction(settings: Sequence[Setting], out: Path) -> None:
    """MSE and SSIM of reconstructed quadrants against PBM's ε, accuracy beside them."""
    figure, panels = plt.subplots(1, 2, figsize=(13, 4.5))
    undefended = _undefended(settings)
    guesses = {
        "attack_mse": _pooled(settings, "attack_mse_prior"),
        "attack_ssim": _pooled(settings, "attack_ssim_prior"),
    }
    for axes, metric, name in zip(
        panels, ("attack_mse", "attack_ssim"), ("MSE", "SSIM"), strict=True
    ):
        for beta in (0.05, 0.25):
            _series(axes, settings, lambda s, b=beta: _pbm(s, b), metric, label=f"PBM β={beta}")
        _series(
            axes,
            settings,
            lambda s: (
                _pbm(s, secure="on")
                if _section(s, "privacy", "secure_aggregation") == "on"
                else None
            ),
            metric,
            label="PBM + secure sum",
            style="D",
        )
        _references(axes, undefended.mean(metric), guesses[metric], name)
        twin = _accuracy(axes, settings, lambda s: _pbm(s, 0.25), "test accuracy (β=0.25)")
        twin.set_ylim(0.0, 1.0)
        axes.set_xscale("log")
        axes.set(
            xlabel="ε of party 1's features (PBM, log)",
            ylabel=f"reconstruction {name}",
            title=f"Reconstruction {name} of party 1's quadrant",
        )
        axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)


def _pooled(settings: Sequence[Setting], key: str) -> float:
    values = [v for s in settings for v in s.values(key)]
    return sum(values) / len(values) if values else math.nan


def completion(settings: Sequence[Setting], out: Path) -> None:
    """Completion accuracy and test accuracy per setting."""
    finished = [s for s in settings if s.finals]
    figure, axes = plt.subplots(figsize=(9, 0.5 * len(finished) + 1.5))
    rows = range(len(finished))
    axes.barh(
        [r + 0.2 for r in rows],
        [s.mean("attack_accuracy") for s in finished],
        0.4,
        xerr=[s.std("attack_accuracy") for s in finished],
        label="completion accuracy",
    )
    axes.barh(
        [r - 0.2 for r in rows],
        [s.mean("test_accuracy") for s in finished],
        0.4,
        xerr=[s.std("test_accuracy") for s in finished],
        label="main-task accuracy",
        color="tab:gray",
    )
    axes.axvline(
        _pooled(settings, "attack_accuracy_prior"),
        color="black",
        linestyle=":",
        label="majority class",
    )
    axes.set_yticks(list(rows), [s.label for s in finished])
    axes.invert_yaxis()
    axes.set(
        xlabel="accuracy",
        xlim=(0, 1),
        title="Model completion by party 1 (MNIST halves, 40 labels)",
    )
    axes.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)


def quadrants(results: Path, out: Path) -> bool:
    """The reconstructed quadrants of ``results/quadrants.json``; False without the file."""
    source = results / "quadrants.json"
    if not source.exists():
        return False
    data = json.loads(source.read_text())
    settings: dict[str, Any] = data["settings"]
    first = next(iter(settings.values()))
    rows = [("truth", first["truth"], "")] + [
        (label, entry["images"], _caption(entry)) for label, entry in settings.items()
    ]
    count = len(first["truth"])
    figure, grid = plt.subplots(len(rows), count, figsize=(1.2 * count + 2.5, 1.3 * len(rows)))
    for row, (label, images, caption) in enumerate(rows):
        for column in range(count):
            axes = grid[row][column]
            axes.imshow(_image(images[column]), cmap="gray")
            axes.set_xticks([])
            axes.set_yticks([])
        grid[row][0].set_ylabel(
            f"{label}\n{caption}", rotation=0, ha="right", va="center", fontsize=8
        )
    figure.suptitle("Party 1's quadrant (top left), as the server reconstructs it (seed 0)")
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)
    return True


def _caption(entry: dict[str, Any]) -> str:
    epsilon = entry["epsilon"]
    where = f"ε={epsilon:.3g}, " if epsilon is not None else ""
    return f"{where}MSE {entry['metrics']['attack_mse']:.4f}"


def _image(values: list[Any]) -> list[Any]:
    """One quadrant ``(C, H, W)`` or ``(H, W)`` as ``(H, W)``."""
    while len(values) == 1 and isinstance(values[0], list) and isinstance(values[0][0], list):
        values = values[0]
    return values


def draw_all(results: Path, img: Path) -> list[Path]:
    """Every figure whose results exist; the files written."""
    img.mkdir(parents=True, exist_ok=True)
    written = []
    makers: dict[str, Callable[[Sequence[Setting], Path], None]] = {
        "label-inference": label_inference,
        "label-inference-adult": lambda s, out: label_inference(s, out, "Adult, three parties"),
        "reconstruction": reconstruction,
        "completion": completion,
    }
    for sweep, make in makers.items():
        if (results / sweep / "sweep.json").exists():
            settings = load_sweep(results / sweep)
            if any(s.finals for s in settings) and _undefended(settings).finals:
                make(settings, img / f"attacks-{sweep}.png")
                written.append(img / f"attacks-{sweep}.png")
    if quadrants(results, img / "attacks-quadrants.png"):
        written.append(img / "attacks-quadrants.png")
    return written
