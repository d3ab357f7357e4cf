"""In-process VFL epochs with the codec run party by party against step by step, in one process.

``party_by_party`` is the in-process transport's request loop before 2026-11-27 (each party's
request encoded, handled, its reply decoded and checked, then the next party), kept here as the
baseline; ``step_by_step`` is ``InProcTransport.request`` as shipped (each codec step for every
party before the next). Both give the same frames, ledger and models. The two alternate epoch by
epoch in one process, with a centralized epoch after each pair, so the VM's drift hits both
alike; the figure to read is the median of the paired ratios.

    .venv/bin/python bench/bench_inproc_order.py [--repeats 7] [--set train.batch_size=512]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from collections.abc import Mapping
from pathlib import Path

import torch

from bench_vfl_vs_centralized import time_variant
from vfl.config import load_config
from vfl.run.data import prepare
from vfl.transport.base import Exchange, check_reply
from vfl.transport.inproc import InProcTransport
from vfl.transport.ledger import Phase
from vfl.wire import SERVER_ID, Message, decode, encode

ROOT = Path(__file__).resolve().parents[1]


def party_by_party(
    self: InProcTransport, messages: Mapping[int, Message], *, phase: Phase = "train"
) -> Exchange:
    """The request loop before the step-by-step order: one party's whole exchange at a time."""
    replies: dict[int, Message] = {}
    failures: dict[int, BaseException] = {}
    for party, message in messages.items():
        endpoint = self._endpoints[party]
        request = encode(message, sender=SERVER_ID)
        self._record(request, message.round, phase, "down", party)
        try:
            reply = endpoint.handle_frame(request)
            self._record(reply, message.round, phase, "up", party)
            frame = decode(reply, max_bytes=self._max_bytes)
            replies[party] = check_reply(frame, party=party, request=message)
        except Exception as error:  # failures are reported as data
            failures[party] = error
    return Exchange(replies, failures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "examples/mnist_quadrants.toml")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    _, _, data = prepare(load_config(args.config, args.overrides))
    orders = {"party_by_party": party_by_party, "step_by_step": InProcTransport.request}
    times: dict[str, list[float]] = {name: [] for name in [*orders, "centralized"]}
    cpu: dict[str, list[float]] = {name: [] for name in times}
    try:
        for repeat in range(args.repeats + 1):  # the first round is a warm-up
            for name, request in orders.items():
                InProcTransport.request = request  # type: ignore[method-assign]
                wall, used = time_variant(args.config, "vfl", args.overrides, data)
                if repeat:
                    times[name].append(wall)
                    cpu[name].append(used)
            wall, used = time_variant(args.config, "centralized", args.overrides, data)
            if repeat:
                times["centralized"].append(wall)
                cpu["centralized"].append(used)
    finally:
        InProcTransport.request = orders["step_by_step"]  # type: ignore[method-assign]
    paired = [s / p for p, s in zip(times["party_by_party"], times["step_by_step"], strict=True)]
    central = statistics.median(times["centralized"])
    result = {
        "config": str(args.config.resolve().relative_to(ROOT)),
        "overrides": args.overrides,
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads,"
        f" torch {torch.__version__}",
        "repeats": args.repeats,
        "median_epoch_s": {k: round(statistics.median(v), 3) for k, v in times.items()},
        "median_epoch_cpu_s": {k: round(statistics.median(v), 3) for k, v in cpu.items()},
        "ratio_over_centralized": {
            name: round(statistics.median(times[name]) / central, 3) for name in orders
        },
        "paired_step_over_party": [round(r, 3) for r in paired],
        "median_paired_step_over_party": round(statistics.median(paired), 3),
        "runs_s": {k: [round(t, 3) for t in v] for k, v in times.items()},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
