"""What one multi-tensor optimizer step over every party would save against one step per party.

The parties of the MNIST example (four MLP bottoms 196 -> 256 -> 64, fused Adam each) step their
optimizers one after another every round. Torch can update all their parameters in one call (one
optimizer over every parameter, or one group per party). This times the three ways on the same
gradients, alternating, and reports the median microseconds per round (wall and CPU) and the
saving per epoch at batch 128 and 512 (469 and 118 rounds).

    .venv/bin/python bench/bench_optimizer_step.py [--parties 4] [--steps 500] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn

ROUNDS_PER_EPOCH = {128: 469, 512: 118}


def bottom() -> nn.Module:
    """A party's bottom model of the MNIST example."""
    return nn.Sequential(nn.Linear(196, 256), nn.ReLU(), nn.Linear(256, 64))


def variants(parties: int) -> dict[str, Callable[[], None]]:
    """The three ways to step every party once, on fixed gradients."""
    models = [bottom() for _ in range(parties)]
    for model in models:
        for param in model.parameters():
            param.grad = torch.randn_like(param)
    own = [torch.optim.Adam(m.parameters(), lr=1e-3, fused=True) for m in models]
    grouped = torch.optim.Adam(
        [{"params": list(m.parameters())} for m in models], lr=1e-3, fused=True
    )
    single = torch.optim.Adam([p for m in models for p in m.parameters()], lr=1e-3, fused=True)

    def one_per_party() -> None:
        for optimizer in own:
            optimizer.step()

    return {
        "one_per_party": one_per_party,
        "one_call_groups": grouped.step,
        "one_call": single.step,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parties", type=int, default=4)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    steps = variants(args.parties)
    wall: dict[str, list[float]] = {name: [] for name in steps}
    cpu: dict[str, list[float]] = {name: [] for name in steps}
    for step in steps.values():  # warm-up: optimizer state, allocator
        for _ in range(20):
            step()
    for _ in range(args.repeats):
        for name, step in steps.items():
            started, cpu_started = time.perf_counter(), time.process_time()
            for _ in range(args.steps):
                step()
            wall[name].append((time.perf_counter() - started) / args.steps * 1e6)
            cpu[name].append((time.process_time() - cpu_started) / args.steps * 1e6)
    medians = {name: statistics.median(t) for name, t in wall.items()}
    saving = medians["one_per_party"] - medians["one_call"]
    print(
        json.dumps(
            {
                "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads,"
                f" torch {torch.__version__}",
                "parties": args.parties,
                "median_us_per_round": {k: round(v, 1) for k, v in medians.items()},
                "median_cpu_us_per_round": {
                    k: round(statistics.median(v), 1) for k, v in cpu.items()
                },
                "saving_ms_per_epoch": {
                    f"batch {b}": round(saving * r / 1000, 1) for b, r in ROUNDS_PER_EPOCH.items()
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
