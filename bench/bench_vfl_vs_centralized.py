"""Time one epoch of in-process VFL against the centralized baseline on the MNIST example.

Both protocols start from the same weights and use the same batch order; runs alternate
(VFL, centralized, VFL, ...) so that machine drift hits both alike. Reports the median of
``--repeats`` runs of each, and their ratio.

    .venv/bin/python bench/bench_vfl_vs_centralized.py [--config examples/mnist_quadrants.toml]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch

from vfl.config import load_config
from vfl.runner import build_simulation, prepare
from vfl.wire import SPLIT_TEST

ROOT = Path(__file__).resolve().parents[1]


def time_epoch(config_path: Path, mode: str, seed: int) -> tuple[float, float]:
    """Seconds for one training epoch, and for that epoch plus the test evaluation."""
    config = load_config(config_path, [f"protocol.mode={mode}", f"train.seed={seed}"])
    _, _, data = prepare(config)
    trainer = build_simulation(config, data).trainer
    started = time.perf_counter()
    trainer.train_epoch(0)
    trained = time.perf_counter()
    trainer.evaluate(SPLIT_TEST)
    finished = time.perf_counter()
    trainer.close()
    return trained - started, finished - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", type=Path, default=ROOT / "examples/mnist_quadrants.toml")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[tuple[float, float]]] = {"vfl": [], "centralized": []}
    time_epoch(args.config, "vfl", 0)  # warm-up: data loading, allocator, lazy imports
    for repeat in range(args.repeats):
        for mode in ("vfl", "centralized"):
            times[mode].append(time_epoch(args.config, mode, repeat))
    result = {
        "config": str(args.config.relative_to(ROOT)),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads,"
        f" torch {torch.__version__}",
        "repeats": args.repeats,
    }
    for index, label in ((0, "train_epoch"), (1, "train_epoch_plus_eval")):
        vfl = statistics.median(t[index] for t in times["vfl"])
        central = statistics.median(t[index] for t in times["centralized"])
        result[label] = {
            "vfl_s": round(vfl, 3),
            "centralized_s": round(central, 3),
            "ratio": round(vfl / central, 3),
        }
    result["all_runs_s"] = {
        mode: [[round(a, 3), round(b, 3)] for a, b in runs] for mode, runs in times.items()
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
