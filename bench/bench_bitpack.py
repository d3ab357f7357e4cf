"""Bit packing by numpy against the compiled loops, per message, and the loops' load per process.

Per message: packing and unpacking ``N`` codes of 7 and 13 bits (widths that are not whole
bytes, which the loops serve), by ``vfl.wire.bitpack``'s numpy path and by the loops of
``vfl.wire.bitpack_kernels``, the median of ``--repeats`` timings of 200 calls each, the two
ways alternating. Per process: a fresh interpreter that has imported numpy and vfl's bit packing
loads the loops (numba's import, its typing of the loops from the disk cache, the first call)
for one message of 4,096 codes; the median wall and CPU seconds of that first call over
``--repeats`` fresh processes. Together they
set ``LOAD_FROM_CODES``, the smallest message that loads the loops into a process.

    .venv/bin/python bench/bench_bitpack.py [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from vfl.wire import bitpack, bitpack_kernels

SIZES = (128, 512, 2048, 8192)
WIDTHS = (7, 13)
LOAD = (
    "import time\n"
    "import numpy as np\n"
    "from vfl.wire import bitpack_kernels\n"
    "codes = np.arange(4096, dtype=np.int64) % 100\n"
    "started, cpu = time.perf_counter(), time.process_time()\n"
    "bitpack_kernels.pack_stream(codes, 7)\n"
    "print(time.perf_counter() - started, time.process_time() - cpu)\n"
)


def per_call_us(call: Callable[[], object], calls: int = 200) -> float:
    """Microseconds per call over ``calls`` calls back to back."""
    started = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - started) / calls * 1e6


def _ways(codes: np.ndarray, bits: int) -> dict[str, Callable[[], object]]:
    """Packing and unpacking ``codes`` by numpy and by the loops."""
    data = bitpack_kernels.pack_stream(codes, bits)
    raw = np.frombuffer(data, dtype=np.uint8)
    count = len(codes)
    return {
        "pack_numpy_us": lambda: bitpack._pack_numpy(codes.view(np.uint64), bits),
        "pack_loops_us": lambda: bitpack_kernels.pack_stream(codes, bits),
        "unpack_numpy_us": lambda: bitpack._unpack_numpy(raw, bits, count),
        "unpack_loops_us": lambda: bitpack_kernels.unpack_stream(data, bits, count),
    }


def message_costs(repeats: int) -> list[dict[str, float]]:
    """Per size and width: the median µs of each way to pack and unpack."""
    bitpack_kernels.compiled()  # loaded: the per-message cost alone
    rows = []
    for size in SIZES:
        for bits in WIDTHS:
            codes = np.random.default_rng(0).integers(0, 2**bits, size).astype(np.int64)
            ways = _ways(codes, bits)
            timings: dict[str, list[float]] = {name: [] for name in ways}
            for _ in range(repeats):
                for name, call in ways.items():
                    timings[name].append(per_call_us(call))
            row = {"codes": float(size), "bits": float(bits)}
            row |= {name: round(statistics.median(t), 2) for name, t in timings.items()}
            rows.append(row)
            print(json.dumps(row))
    return rows


def load_costs(repeats: int) -> dict[str, float]:
    """The median seconds a fresh process spends loading the loops for its first message."""
    walls, cpus = [], []
    for _ in range(repeats):
        done = subprocess.run(
            [sys.executable, "-c", LOAD], capture_output=True, text=True, check=True
        )
        wall, cpu = done.stdout.split()[-2:]
        walls.append(float(wall))
        cpus.append(float(cpu))
    return {
        "load_wall_s": round(statistics.median(walls), 3),
        "load_cpu_s": round(statistics.median(cpus), 3),
    }


def main() -> None:
    """Measure, print and optionally save."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    messages = message_costs(args.repeats)
    load = load_costs(args.repeats)
    print(json.dumps(load))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        result = {
            "command": " ".join(sys.argv),
            "date": datetime.date.today().isoformat(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
            "load_from_codes": bitpack_kernels.LOAD_FROM_CODES,
            "messages": messages,
            "load": load,
        }
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
