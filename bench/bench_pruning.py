"""FLOPs and measured training-step time of LVFL bottoms before and after structured pruning.

Issue 6's goal: at alpha = 0.5 the bottom model's FLOPs fall by at least 40% and its training
step time (forward + backward + optimizer step on one batch) by at least 30%, median of 5 runs.
The bottoms are those of the examples on one 14x14 quadrant: the Fashion-MNIST SmallCNN
(``SmallCNN(1, 14, 14, 64, channels=(16, 32))``), a wider variant with channels (32, 64), and the
MNIST MLP (``MLP(196, [256], 64)``); batch 128, Adam (fused) as in the examples.

Each model is trained for a few steps, then pruned the way the training loop will do it
(``ProgressivePruner.step`` and ``rebuild_optimizer``), so both variants time the same optimizer
with live state. A run times ``--steps`` steps after ``--warmup`` warm-up steps; the original
and pruned variants alternate run by run, and the report gives the median of ``--repeats``
runs. Prints a JSON report.

    .venv/bin/python bench/bench_pruning.py [--alpha 0.5] [--repeats 5] [--steps 50]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from vfl.models import MLP
from vfl.models.bottom import SmallCNN
from vfl.prune import ProgressivePruner, count_params, flops_per_sample, rebuild_optimizer
from vfl.seeding import torch_seed

INPUT_SHAPE = (1, 14, 14)
EMBEDDING = 64
GOALS = {"flops_reduction": 0.40, "step_time_reduction": 0.30}
MODELS: dict[str, Callable[[], nn.Module]] = {
    "cnn_16_32": lambda: SmallCNN(1, 14, 14, EMBEDDING, channels=(16, 32)),
    "cnn_32_64": lambda: SmallCNN(1, 14, 14, EMBEDDING, channels=(32, 64)),
    "mlp_256": lambda: MLP(196, [256], EMBEDDING),
}


@dataclass
class Variant:
    """A model, its optimizer and a fixed batch to train on."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    x: torch.Tensor
    target: torch.Tensor

    def step(self) -> None:
        """One training step: forward, MSE to the target, backward, optimizer step."""
        self.optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(self.model(self.x), self.target)
        loss.backward()
        self.optimizer.step()

    def time_steps(self, warmup: int, steps: int) -> float:
        """Milliseconds per step, averaged over ``steps`` steps after ``warmup``."""
        for _ in range(warmup):
            self.step()
        started = time.perf_counter()
        for _ in range(steps):
            self.step()
        return 1e3 * (time.perf_counter() - started) / steps


def build_pair(name: str, alpha: float, batch: int) -> tuple[Variant, Variant]:
    """The original model (a few steps trained) and its pruned copy with the sliced Adam state."""
    with torch_seed(0):
        model = MODELS[name]()
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(batch, *INPUT_SHAPE, generator=generator)
    target = torch.randn(batch, EMBEDDING, generator=generator)
    original = Variant(model, torch.optim.Adam(model.parameters(), lr=1e-3, fused=True), x, target)
    for _ in range(3):
        original.step()
    pruned = ProgressivePruner.for_model(model).step(model, alpha)
    if pruned is None:
        raise SystemExit(f"alpha {alpha} removes no unit of {name}")
    optimizer = rebuild_optimizer(original.optimizer, model, pruned)
    return original, Variant(pruned.model, optimizer, x, target)


def measure(name: str, args: argparse.Namespace) -> dict[str, object]:
    """FLOPs, parameters and median step times of one model, original against pruned."""
    original, pruned = build_pair(name, args.alpha, args.batch)
    runs: dict[str, list[float]] = {"original": [], "pruned": []}
    for _ in range(args.repeats):
        for label, variant in (("original", original), ("pruned", pruned)):
            runs[label].append(variant.time_steps(args.warmup, args.steps))
    flops = {k: flops_per_sample(v.model, INPUT_SHAPE) for k, v in _pair(original, pruned)}
    params = {k: count_params(v.model) for k, v in _pair(original, pruned)}
    median = {k: statistics.median(v) for k, v in runs.items()}
    return {
        "flops_per_sample": {**flops, "reduction": _reduction(flops)},
        "params": {**params, "reduction": _reduction(params)},
        "step_ms_median": {**median, "reduction": _reduction(median)},
        "step_ms_runs": runs,
        "goals_met": {
            "flops": _reduction(flops) >= GOALS["flops_reduction"],
            "step_time": _reduction(median) >= GOALS["step_time_reduction"],
        },
    }


def _pair(original: Variant, pruned: Variant) -> tuple[tuple[str, Variant], ...]:
    return (("original", original), ("pruned", pruned))


def _reduction(values: dict[str, float] | dict[str, int]) -> float:
    return round(1.0 - values["pruned"] / values["original"], 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    results = {name: measure(name, args) for name in args.models}
    report = {
        "machine": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "processor": platform.machine(),
        },
        "settings": {k: v for k, v in vars(args).items() if k != "models"},
        "goals": GOALS,
        "models": results,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
