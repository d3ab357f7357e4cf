"""What a call costs hot (called again and again) and cold (first call after other work).

A VFL round runs each piece of its message path once between long stretches of other work
(a party's forward and backward pass, the head's step), so every piece runs cold: its code and
data have left the caches and branch predictors since the last round. A benchmark that calls a
piece in a tight loop measures it hot and can understate its share of a round several times
over. This script measures both for pieces of the MNIST example's round:

- ``hot``: the call repeated back to back (median of the per-call times);
- ``after_spin``: the first call after 2 ms of an unrelated Python loop;
- ``after_step``: the first call after one training step of a party's MLP bottom (196 -> 256 ->
  64, batch 128, Adam), the work that really sits between two messages.

Each line is the median over ``--calls`` calls; the three settings alternate call by call.

    .venv/bin/python bench/bench_cold_path.py [--calls 400] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import struct
import time
from collections.abc import Callable
from pathlib import Path

import torch

from vfl.wire import EmbedReply, GradEmbedRequest, decode, encode
from vfl.wire.checks import all_finite

BATCH, WIDTH, ROWS = 128, 64, 60_000


def spin(seconds: float = 0.002) -> None:
    """Unrelated interpreter work for ``seconds``."""
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        pass


def training_step() -> Callable[[], None]:
    """One step of a party's bottom model on a fixed batch (what runs between two messages)."""
    model = torch.nn.Sequential(
        torch.nn.Linear(196, 256), torch.nn.ReLU(), torch.nn.Linear(256, WIDTH)
    )
    optimizer = torch.optim.Adam(model.parameters())
    rows = torch.randn(BATCH, 196)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        model(rows).sum().backward()
        optimizer.step()

    return step


def pieces() -> dict[str, Callable[[], object]]:
    """The calls to time: from a bare struct.pack up to a whole request's encode and decode."""
    generator = torch.Generator().manual_seed(0)
    grad = torch.randn(BATCH, WIDTH, generator=generator)
    ids = torch.randperm(ROWS, generator=generator)[:BATCH]
    request = GradEmbedRequest(round=1, grad=grad, ids=ids)
    reply = EmbedReply(round=1, embedding=torch.randn(BATCH, WIDTH, generator=generator))
    request_frame, reply_frame = encode(request, sender=0), encode(reply, sender=1)
    header = struct.Struct("<2sBBHI")
    return {
        "struct.pack (frame header)": lambda: header.pack(b"VF", 2, 7, 0, 1),
        "all_finite (128 x 64 float32)": lambda: all_finite(grad),
        "encode GradEmbedRequest": lambda: encode(request, sender=0),
        "decode GradEmbedRequest": lambda: decode(request_frame),
        "encode EmbedReply": lambda: encode(reply, sender=1),
        "decode EmbedReply": lambda: decode(reply_frame),
    }


def time_call(call: Callable[[], object]) -> float:
    """Microseconds one call takes."""
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = parser.parse_args()
    step = training_step()
    settings: dict[str, Callable[[], None]] = {"hot": lambda: None, "after_spin": spin}
    settings["after_step"] = step
    table: dict[str, dict[str, float]] = {}
    for name, call in pieces().items():
        for _ in range(20):  # warm-up: lazy initialisation, compiled loops
            call()
            step()
        times: dict[str, list[float]] = {setting: [] for setting in settings}
        for _ in range(args.calls):
            for setting, before in settings.items():
                before()
                if setting == "hot":
                    call()  # the timed call follows a call of itself
                times[setting].append(time_call(call))
        table[name] = {s: round(statistics.median(t), 2) for s, t in times.items()}
    result = {
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads,"
        f" torch {torch.__version__}, Python {platform.python_version()}",
        "calls": args.calls,
        "median_us": table,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
