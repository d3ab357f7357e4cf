"""The cost of PBM plus secure-aggregation masking per round, as a fraction of a training round.

For M = 4 (quadrants) and M = 16 (vertical strips) parties on Fashion-MNIST with MLP bottoms
ending in tanh and a sum head (the VFL-PBM model), it times whole training rounds of the private
protocol and, inside them, the time spent in the privacy pipeline: every party's PBM sampling,
masking and packing (``PartySecureSum.train_reply``) and the server's unpacking, unmasking and
estimate (``ServerSecureSum.estimate_sum``). Reports the median over repeats of
pipeline time / round time. Goal: <= 10 %.

    .venv/bin/python bench/bench_pbm.py [--rounds 60] [--repeats 5] [--set privacy.sampler=torch]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from vfl.config import load_config
from vfl.privacy.secure_sum import PartySecureSum, ServerSecureSum
from vfl.run.compose import build_session
from vfl.run.data import prepare

ROOT = Path(__file__).resolve().parents[1]
PRIVATE = [
    "data.name=fashion-mnist",
    "model.bottom.kind=mlp",
    "model.bottom.hidden=[128]",
    "model.bottom.embedding_dim=32",
    "model.bottom.output_activation=tanh",
    "model.head.fusion=sum",
    "model.head.hidden=[]",
    "privacy.mechanism=pbm",
    "privacy.trials=64",
    "privacy.beta=0.25",
]
SPLITS = {
    4: ["partition.scheme=quadrants", "partition.num_parties=4"],
    16: ["partition.scheme=strips", "partition.num_parties=16"],
}


class Stopwatch:
    """Accumulates the time spent in wrapped callables."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        return timed


def measure(parties: int, rounds: int, overrides: list[str]) -> tuple[float, float, float]:
    """Seconds per round, seconds per round inside the privacy pipeline, CPU seconds per round."""
    config = load_config(
        ROOT / "examples/fashion_mnist.toml", [*PRIVATE, *SPLITS[parties], *overrides]
    )
    _, _, data = prepare(config)
    simulation = build_session(config, data)
    trainer = simulation.trainer
    watch = Stopwatch()
    for party in simulation.parties:
        privacy = party.options.privacy
        assert isinstance(privacy, PartySecureSum)
        privacy.train_reply = watch.wrap(privacy.train_reply)  # type: ignore[method-assign]
    secure_sum = trainer.secure_sum  # type: ignore[attr-defined]
    assert isinstance(secure_sum, ServerSecureSum)
    secure_sum.estimate_sum = watch.wrap(secure_sum.estimate_sum)  # type: ignore[method-assign]
    trainer.setup()
    batches = trainer.sampler.epoch(0)
    for ids in batches[:5]:  # warm-up
        trainer.train_round(ids)
    watch.seconds = 0.0
    started, cpu_started = time.perf_counter(), time.process_time()
    for ids in batches[5 : 5 + rounds]:
        trainer.train_round(ids)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    trainer.close()
    return elapsed / rounds, watch.seconds / rounds, cpu / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    report: dict[str, Any] = {
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads,"
        f" torch {torch.__version__}",
        "settings": "Fashion-MNIST, MLP 128 -> 32 tanh, sum head, b=64, beta=0.25, batch 128",
        "rounds": args.rounds,
        "repeats": args.repeats,
        "overrides": args.overrides,
    }
    for parties in SPLITS:
        runs = [measure(parties, args.rounds, args.overrides) for _ in range(args.repeats)]
        fractions = [pipeline / total for total, pipeline, _ in runs]
        report[f"M={parties}"] = {
            "round_ms": round(1000 * statistics.median(t for t, _, _ in runs), 2),
            "round_cpu_ms": round(1000 * statistics.median(c for _, _, c in runs), 2),
            "pbm_and_masking_ms": round(1000 * statistics.median(p for _, p, _ in runs), 2),
            "fraction": round(statistics.median(fractions), 4),
            "fractions": [round(f, 4) for f in fractions],
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
