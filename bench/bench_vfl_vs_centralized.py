"""Time one epoch of in-process VFL against the centralized baseline on the MNIST example.

Three variants, each from the same weights with the same batch order:

- ``centralized``: the combined model, one optimizer, one backward pass per step (the baseline);
- ``split_floor``: the VFL computation with no messages at all: each party's bottom and the head
  run as separate autograd graphs with separate optimizers (what any VFL must do), called directly;
- ``vfl_no_codec``: the real roles and protocol loop, but a transport that hands message objects
  to the parties without encoding, counting or decoding them (isolates the codec's cost);
- ``vfl``: the real protocol through the in-process transport (every message encoded, counted,
  validated and decoded).

Runs alternate between the variants so that machine drift hits all alike; each figure is the
median of ``--repeats`` runs. ``vfl / centralized`` is the goal ratio; ``split_floor /
centralized`` shows how much of it is the unavoidable cost of separate parties.

    .venv/bin/python bench/bench_vfl_vs_centralized.py [--config ...] [--repeats 5] [--set k=v]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

from vfl.config import load_config
from vfl.data.vertical import VerticalData
from vfl.protocol.split_learning import SplitLearning
from vfl.roles.party import Party
from vfl.run.compose import build_session
from vfl.run.data import prepare
from vfl.run.session import Session
from vfl.transport.base import Exchange, Transport
from vfl.transport.inproc import InProcTransport
from vfl.transport.ledger import Phase
from vfl.wire import SPLIT_TRAIN, Message

ROOT = Path(__file__).resolve().parents[1]


class UncodedTransport(Transport):
    """Benchmark-only: calls party handlers with the message objects themselves."""

    def __init__(self, inner: InProcTransport) -> None:
        super().__init__()
        self._handlers = {p: e.handler for p, e in inner._endpoints.items()}

    @property
    def party_ids(self) -> tuple[int, ...]:
        return tuple(self._handlers)

    def request(self, messages: Mapping[int, Message], *, phase: Phase = "train") -> Exchange:
        return Exchange({p: self._handlers[p](m) for p, m in messages.items()})


def split_floor_epoch(simulation: Session) -> None:
    """One epoch of separate-party training with direct calls instead of messages."""
    trainer = simulation.trainer
    assert isinstance(trainer, SplitLearning)
    server = trainer.server
    for ids in trainer.sampler.epoch(0):
        embeddings = [
            p.model(
                torch.index_select(p.features[SPLIT_TRAIN], 0, ids).to(p.device, non_blocking=True)
            )
            for p in simulation.parties
        ]
        inputs = [e.detach().requires_grad_(True) for e in embeddings]
        labels = server.labels[SPLIT_TRAIN][ids].to(server.device, non_blocking=True)
        loss = server.task.loss(server.head(inputs), labels)
        server.optimizer.zero_grad(set_to_none=True)
        torch.autograd.backward(loss)
        server.optimizer.step()
        for party, embedding, head_input in zip(
            simulation.parties, embeddings, inputs, strict=True
        ):
            _step_party(party, embedding, head_input.grad)


def _step_party(party: Party, embedding: torch.Tensor, grad: torch.Tensor | None) -> None:
    party.optimizer.zero_grad(set_to_none=True)
    torch.autograd.backward(embedding, grad)
    party.optimizer.step()


def time_variant(
    config_path: Path, variant: str, overrides: list[str], data: VerticalData
) -> tuple[float, float]:
    """Wall and CPU seconds (this process, all threads) for one training epoch of ``variant``."""
    mode = "centralized" if variant == "centralized" else "vfl"
    config = load_config(config_path, [*overrides, f"protocol.mode={mode}"])
    simulation = build_session(config, data)
    if variant == "vfl_no_codec":
        trainer = simulation.trainer
        assert isinstance(trainer, SplitLearning) and isinstance(trainer.transport, InProcTransport)
        trainer.transport = UncodedTransport(trainer.transport)
    run: Callable[[], object] = (
        (lambda: split_floor_epoch(simulation))
        if variant == "split_floor"
        else (lambda: simulation.trainer.train_epoch(0))
    )
    started, cpu_started = time.perf_counter(), time.process_time()
    run()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    simulation.trainer.close()
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "examples/mnist_quadrants.toml")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    _, _, data = prepare(load_config(args.config, args.overrides))
    variants = ("vfl", "vfl_no_codec", "split_floor", "centralized")
    times: dict[str, list[float]] = {v: [] for v in variants}
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    for variant in variants:  # warm-up: allocator, lazy initialisation
        time_variant(args.config, variant, args.overrides, data)
    for _ in range(args.repeats):
        for variant in variants:
            wall, used = time_variant(args.config, variant, args.overrides, data)
            times[variant].append(wall)
            cpu[variant].append(used)
    medians = {v: statistics.median(t) for v, t in times.items()}
    result = {
        "config": str(args.config.resolve().relative_to(ROOT)),
        "overrides": args.overrides,
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads,"
        f" torch {torch.__version__}",
        "repeats": args.repeats,
        "median_epoch_s": {v: round(m, 3) for v, m in medians.items()},
        "median_epoch_cpu_s": {v: round(statistics.median(t), 3) for v, t in cpu.items()},
        "ratio_vfl_over_centralized": round(medians["vfl"] / medians["centralized"], 3),
        "ratio_vfl_no_codec_over_centralized": round(
            medians["vfl_no_codec"] / medians["centralized"], 3
        ),
        "ratio_split_floor_over_centralized": round(
            medians["split_floor"] / medians["centralized"], 3
        ),
        "runs_s": {v: [round(t, 3) for t in runs] for v, runs in times.items()},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
