"""PBM count samplers: the exact ChaCha20 sampler against ``torch.binomial``, by trials b.

Draws 4,096 Binomial(b, p) counts (a batch of 128 times a 32-wide embedding, p uniform in
[1/4, 3/4]) with each sampler, alternating, and reports the median milliseconds per draw, wall
and CPU, at each b. One torch thread.

    .venv/bin/python bench/bench_sampler.py [--trials 4 16 64 256 1024 4096] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from functools import partial

import numpy as np
import torch

from vfl.privacy.binomial import ChaChaBinomial, CountSampler, TorchBinomial

COORDINATES = 4096


def timed(draw: Callable[[], object], count: int) -> tuple[float, float]:
    """Milliseconds of wall and CPU time per call, over ``count`` calls."""
    started, cpu_started = time.perf_counter(), time.process_time()
    for _ in range(count):
        draw()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return 1000 * wall / count, 1000 * cpu / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, nargs="+", default=[4, 16, 64, 256, 1024, 4096])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    torch.set_num_threads(1)
    prob = np.random.default_rng(0).uniform(0.25, 0.75, COORDINATES)
    samplers: dict[str, CountSampler] = {
        "chacha": ChaChaBinomial.from_seed(0),
        "torch": TorchBinomial(torch.Generator().manual_seed(0)),
    }
    report: dict[str, object] = {
        "machine": f"{platform.machine()}, 1 torch thread, torch {torch.__version__}",
        "coordinates": COORDINATES,
    }
    for trials in args.trials:
        wall: dict[str, list[float]] = {name: [] for name in samplers}
        cpu: dict[str, list[float]] = {name: [] for name in samplers}
        for sampler in samplers.values():  # warm-up: compilation, buffers
            sampler.binomial(trials, prob)
        for _ in range(args.repeats):
            for name, sampler in samplers.items():
                seconds, used = timed(partial(sampler.binomial, trials, prob), args.calls)
                wall[name].append(seconds)
                cpu[name].append(used)
        medians = {name: statistics.median(t) for name, t in wall.items()}
        report[f"b={trials}"] = {
            "ms_per_draw": {k: round(v, 4) for k, v in medians.items()},
            "cpu_ms_per_draw": {k: round(statistics.median(v), 4) for k, v in cpu.items()},
            "chacha_over_torch": round(medians["chacha"] / medians["torch"], 2),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
