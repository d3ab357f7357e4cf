"""Each compressor's encode + decode time as a fraction of a training round of the MNIST example.

One C-VFL round of the MNIST example moves 4 party embeddings of shape (B, P) = (128, 64) and the
server model (the head's 256·128 + 128 + 128·10 + 10 = 34,186 parameters). For every compressor
this times, per round, ``compress -> to_bytes -> from_bytes -> decompress`` of those five tensors
(real embeddings and head parameters of the built example), median of ``--repeats`` rounds. The
round time is measured in the same run: the median of ``--rounds`` training rounds
(``trainer.train_epoch`` with a per-round callback) of the example as configured (the
split-learning baseline, built by ``vfl.run.runner``). Goal: <= 5%.

    .venv/bin/python bench/bench_compressors.py [--rounds 100] [--repeats 50] [--set key=value ...]
        [--only lattice] [--reference]

``--only NAME`` times only that compressor's settings; ``--reference`` runs the lattice quantizer
on its numpy reference path instead of the compiled loops (``vfl.compress.lattice_kernels``).

With ``--set protocol.labels=shared --set protocol.local_steps=10`` the round is one of C-VFL
Algorithm 1 with Q = 10 (uncompressed links, so the round time holds no compressor work).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import time
from pathlib import Path

import torch

from vfl.compress import Compressor, lattice_kernels, make_compressor
from vfl.config import load_config
from vfl.protocol.loop import ServerLoop
from vfl.run.compose import build_session
from vfl.run.data import prepare
from vfl.run.session import Session
from vfl.seeding import derive_seed
from vfl.wire import SPLIT_TRAIN

ROOT = Path(__file__).resolve().parents[1]
GOAL = 0.05
SETTINGS: dict[str, dict[str, object]] = {
    "identity": {"name": "identity"},
    "scalar-b2": {"name": "scalar", "bits": 2},
    "scalar-b4": {"name": "scalar", "bits": 4},
    "lattice-b2": {"name": "lattice", "bits": 2},
    "lattice-b3": {"name": "lattice", "bits": 3},
    "lattice-b4": {"name": "lattice", "bits": 4},
    "topk-b2": {"name": "topk", "bits": 2},
    "topk-b2-rows": {"name": "topk", "bits": 2, "per_row": True},
}


class _Enough(Exception):
    """Stops the epoch once enough rounds are timed."""


def round_times(simulation: Session, rounds: int) -> list[float]:
    """Seconds of ``rounds`` training rounds (after 5 warm-up rounds), through ``train_epoch``."""
    times: list[float] = []
    last = time.perf_counter()

    def lap(loss: float) -> None:
        nonlocal last
        now = time.perf_counter()
        times.append(now - last)
        last = now
        if len(times) == rounds + 5:
            raise _Enough

    with contextlib.suppress(_Enough):
        simulation.trainer.train_epoch(0, on_round=lap)
    return times[5:]


def round_tensors(simulation: Session) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    """The party embeddings of one batch, the head's flat parameters, and top-k scores."""
    trainer = simulation.trainer
    assert isinstance(trainer, ServerLoop), "the benchmark needs the VFL protocol"
    ids = trainer.sampler.epoch(1)[0]
    with torch.no_grad():
        embeddings = [p.model(p.features[SPLIT_TRAIN][ids]) for p in simulation.parties]
        flat = torch.cat([w.reshape(-1) for w in trainer.server.head.parameters()])
    generator = torch.Generator().manual_seed(0)
    scores = torch.randn(embeddings[0].shape[1], generator=generator).abs()
    return embeddings, flat, scores


def cycle(compressor: Compressor, x: torch.Tensor, seed: int, scores: torch.Tensor | None) -> int:
    """One compress -> bytes -> decompress; returns the payload size."""
    data = compressor.compress(x, seed=seed, scores=scores).to_bytes()
    compressor.decompress(compressor.from_bytes(data, x.shape), seed=seed)
    return len(data)


def time_compressor(
    compressor: Compressor,
    embeddings: list[torch.Tensor],
    flat: torch.Tensor,
    scores: torch.Tensor,
    repeats: int,
) -> dict[str, float]:
    """Median milliseconds per round (embeddings, server model, both) and bytes per round."""
    parts: dict[str, list[float]] = {"embeddings": [], "server_model": []}
    size = 0
    for repeat in range(repeats + 3):
        seed = derive_seed(0, "bench", repeat)
        started = time.perf_counter()
        size = sum(cycle(compressor, h, seed, scores) for h in embeddings)
        middle = time.perf_counter()
        size += cycle(compressor, flat, seed, None)
        ended = time.perf_counter()
        if repeat >= 3:  # warm-up: codebooks, allocator
            parts["embeddings"].append(middle - started)
            parts["server_model"].append(ended - middle)
    result = {f"{k}_ms": 1e3 * statistics.median(v) for k, v in parts.items()}
    result["round_ms"] = result["embeddings_ms"] + result["server_model_ms"]
    result["bytes_per_round"] = size
    return result


def time_all(
    embeddings: list[torch.Tensor],
    flat: torch.Tensor,
    scores: torch.Tensor,
    repeats: int,
    round_ms: float,
    only: str | None = None,
) -> dict[str, dict[str, float | bool]]:
    """Every setting's timings (of compressor ``only`` if given), with its fraction of the round."""
    results: dict[str, dict[str, float | bool]] = {}
    for label, setting in SETTINGS.items():
        if only is not None and setting["name"] != only:
            continue
        params = {k: v for k, v in setting.items() if k != "name"}
        compressor = make_compressor(str(setting["name"]), **params)
        timing = time_compressor(compressor, embeddings, flat, scores, repeats)
        fraction = timing["round_ms"] / round_ms
        results[label] = {k: round(v, 3) for k, v in timing.items()} | {
            "fraction_of_round": round(fraction, 4),
            "meets_goal": fraction <= GOAL,
        }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "examples/mnist_quadrants.toml")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--only", choices=sorted({str(s["name"]) for s in SETTINGS.values()}))
    parser.add_argument("--reference", action="store_true", help="lattice without numba loops")
    args = parser.parse_args()
    if args.reference:
        lattice_kernels.AVAILABLE = False
    config = load_config(args.config, args.overrides)
    simulation = build_session(config, prepare(config)[2])
    train = round_times(simulation, args.rounds)
    embeddings, flat, scores = round_tensors(simulation)
    simulation.trainer.close()
    round_ms = 1e3 * statistics.median(train)
    report: dict[str, object] = {
        "config": str(args.config.resolve().relative_to(ROOT)),
        "overrides": args.overrides,
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads,"
        f" torch {torch.__version__}",
        "shapes": {
            "embeddings": [list(h.shape) for h in embeddings],
            "server_model": [flat.numel()],
        },
        "train_round_ms": {
            "median": round(round_ms, 3),
            "mean": round(1e3 * statistics.mean(train), 3),
        },
        "rounds": len(train),
        "repeats": args.repeats,
        "goal_fraction": GOAL,
        "lattice_path": "compiled" if lattice_kernels.AVAILABLE else "numpy reference",
    }
    report["compressors"] = time_all(embeddings, flat, scores, args.repeats, round_ms, args.only)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
