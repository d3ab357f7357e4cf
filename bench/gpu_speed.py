"""VFL against centralized on one device: the Fashion-MNIST CNN example, alternating in one process.

Each repeat times one training epoch of each variant, in turn, from the same initial weights and
batch order (a fresh session each time; only ``train_epoch`` is timed, ended by a device
synchronisation): ``vfl`` (the real protocol through the in-process transport, every message
encoded, counted and decoded), ``split_floor`` (the parties' and the head's separate graphs and
optimizers called directly: what any VFL must do) and ``centralized`` (the combined model). A
first, untimed repeat warms up (compiled loops, allocator). Medians over the timed repeats.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from bench_vfl_vs_centralized import split_floor_epoch
from gpu_paths import EXAMPLE, synchronize

VARIANTS = ("vfl", "split_floor", "centralized")


def epoch_seconds(
    variant: str, device: str, batch: int, data: Any, extra: tuple[str, ...]
) -> float:
    """Wall seconds of one training epoch of ``variant``."""
    from vfl.config import load_config
    from vfl.run.compose import build_session

    mode = "centralized" if variant == "centralized" else "vfl"
    settings = [
        *extra,
        f"train.batch_size={batch}",
        f"train.device={device}",
        f"protocol.mode={mode}",
    ]
    session = build_session(load_config(EXAMPLE, settings), data)
    run: Callable[[], object] = (
        (lambda: split_floor_epoch(session))
        if variant == "split_floor"
        else (lambda: session.trainer.train_epoch(0))
    )
    synchronize(device)
    started = time.perf_counter()
    run()
    synchronize(device)
    elapsed = time.perf_counter() - started
    session.trainer.close()
    return elapsed


def alternate(
    device: str, batch: int, repeats: int, data: Any, extra: tuple[str, ...]
) -> dict[str, Any]:
    """Medians of ``repeats`` alternations (after one warm-up) at batch size ``batch``."""
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for repeat in range(repeats + 1):
        for variant in VARIANTS:
            seconds = epoch_seconds(variant, device, batch, data, extra)
            if repeat:
                times[variant].append(seconds)
    medians = {v: statistics.median(t) for v, t in times.items()}
    return {
        "batch_size": batch,
        "repeats": repeats,
        "median_epoch_s": {v: round(m, 4) for v, m in medians.items()},
        "ratio_vfl_over_centralized": round(medians["vfl"] / medians["centralized"], 3),
        "ratio_split_floor_over_centralized": round(
            medians["split_floor"] / medians["centralized"], 3
        ),
        "runs_s": {v: [round(t, 4) for t in runs] for v, runs in times.items()},
    }
