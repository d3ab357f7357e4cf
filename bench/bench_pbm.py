"""The cost of PBM plus secure-aggregation masking per round, as a fraction of a training round.

For M = 4 (quadrants) and M = 16 (vertical strips) parties on Fashion-MNIST with MLP bottoms
ending in tanh and a sum head (the VFL-PBM model), it times whole training rounds of the private
protocol and, inside them, the time spent in the privacy pipeline: every party's PBM sampling,
masking and packing (``PartySecureSum.train_reply``) and the server's unpacking, unmasking and
estimate (``ServerSecureSum.estimate_sum``). Reports the median over repeats of
pipeline time / round time (goal: <= 10 %), and where the pipeline's time goes: drawing the
counts, the rest of ``privatize`` (checks, p), masking, packing, and the server's side.

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
from unittest import mock

import torch

from vfl.config import load_config
from vfl.privacy.pbm import PoissonBinomialMechanism
from vfl.privacy.secure_sum import PartySecureSum, ServerSecureSum
from vfl.run.compose import build_session
from vfl.run.data import prepare
from vfl.secagg import encode_masked, mask

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


Parts = dict[str, float]
"""Milliseconds per round by part of the pipeline."""


def measure(parties: int, rounds: int, overrides: list[str]) -> tuple[float, float, float, Parts]:
    """Seconds per round, seconds in the privacy pipeline, CPU seconds, and the pipeline's parts."""
    config = load_config(
        ROOT / "examples/fashion_mnist.toml", [*PRIVATE, *SPLITS[parties], *overrides]
    )
    _, _, data = prepare(config)
    simulation = build_session(config, data)
    trainer = simulation.trainer
    watch = Stopwatch()
    parts = {name: Stopwatch() for name in ("sampling", "privatize", "masking", "packing")}
    for party in simulation.parties:
        privacy = party.options.privacy
        assert isinstance(privacy, PartySecureSum)
        privacy.train_reply = watch.wrap(privacy.train_reply)  # type: ignore[method-assign]
        sampler = type(privacy.sampler)
    secure_sum = trainer.secure_sum  # type: ignore[attr-defined]
    assert isinstance(secure_sum, ServerSecureSum)
    server = Stopwatch()
    secure_sum.estimate_sum = server.wrap(watch.wrap(secure_sum.estimate_sum))  # type: ignore[method-assign]
    with (
        mock.patch.object(sampler, "binomial", parts["sampling"].wrap(sampler.binomial)),
        mock.patch.object(
            PoissonBinomialMechanism,
            "privatize",
            parts["privatize"].wrap(PoissonBinomialMechanism.privatize),
        ),
        mock.patch("vfl.privacy.secure_sum.mask", parts["masking"].wrap(mask)),
        mock.patch("vfl.privacy.secure_sum.encode_masked", parts["packing"].wrap(encode_masked)),
    ):
        trainer.setup()
        batches = trainer.sampler.epoch(0)
        for ids in batches[:5]:  # warm-up
            trainer.train_round(ids)
        for stopwatch in (watch, server, *parts.values()):
            stopwatch.seconds = 0.0
        started, cpu_started = time.perf_counter(), time.process_time()
        for ids in batches[5 : 5 + rounds]:
            trainer.train_round(ids)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    trainer.close()
    seconds = {name: stopwatch.seconds for name, stopwatch in parts.items()}
    breakdown = {
        "sampling": seconds["sampling"],
        "privatize_other": seconds["privatize"] - seconds["sampling"],
        "masking": seconds["masking"],
        "packing": seconds["packing"],
        "server": server.seconds,
    }
    per_round = {name: 1000 * value / rounds for name, value in breakdown.items()}
    return elapsed / rounds, watch.seconds / rounds, cpu / rounds, per_round


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
        fractions = [pipeline / total for total, pipeline, _, _ in runs]
        report[f"M={parties}"] = {
            "round_ms": round(1000 * statistics.median(t for t, _, _, _ in runs), 2),
            "round_cpu_ms": round(1000 * statistics.median(c for _, _, c, _ in runs), 2),
            "pbm_and_masking_ms": round(1000 * statistics.median(p for _, p, _, _ in runs), 2),
            "fraction": round(statistics.median(fractions), 4),
            "fractions": [round(f, 4) for f in fractions],
            "parts_ms": {
                name: round(statistics.median(r[3][name] for r in runs), 3) for name in runs[0][3]
            },
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
