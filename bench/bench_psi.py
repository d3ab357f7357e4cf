"""Time the deployment's private set intersection (``vfl.deploy.alignment.align``) by list size.

For each size N in ``--sizes``, the server and ``--parties`` parties each hold N IDs, 80 % of
them shared by all (drawn from 1.25 N), in their own random orders. Alignment runs through the
server's relay to in-process party runtimes, every message encoded and decoded as over the
network (``LocalControl``): one process does every holder's work one after another, so the
time is about the protocol's whole CPU cost (the server's share runs in a thread beside the
parties', and each list's work in threads over the cores); in a deployment each holder works
on its own machine, and the server's share is the longest. It reports the median over
``--repeats`` runs (``--repeats-large`` for N >= 1,000,000: one run by default, slow) of:

- ``align_s``: the whole alignment; ``us_per_id``: divided by N; ``s_per_10k``: per 10,000 IDs;
- ``hash_us`` / ``blind_us``: one holder's ``H(x)`` and one scalar multiplication per element
  (over the first 10,000 IDs), the two costs every list is made of: each holder hashes its N
  IDs once; each party blinds 2 lists of N, the server ``parties + 1``;
- ``threads``: threads per holder (``VFL_PSI_THREADS``, default: the usable cores);
- ``cpu_s``: the alignment's CPU time (every thread of this process);
- ``primitives``: on one thread, alternating five times over 2,000 IDs, the group operations of
  this version (hash to the group as a u-coordinate, X25519 blinding) against those of the
  edwards25519 version before it (two Elligator maps added; ``crypto_scalarmult_ed25519_noclamp``,
  which re-checks subgroup membership), called on libsodium directly, and their ratio.

    .venv/bin/python bench/bench_psi.py [--sizes 10000 100000 1000000] [--parties 3]
        [--repeats 3] [--repeats-large 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from nacl import bindings

from vfl.deploy import psi
from vfl.deploy.alignment import align
from vfl.deploy.control import LocalControl
from vfl.deploy.data import HolderSplit, id_bytes
from vfl.deploy.party import PartyRuntime
from vfl.deploy.psi_group import blind, hash_many, new_scalar
from vfl.deploy.psi_work import workers
from vfl.deploy.state import PartyState
from vfl.transport import PartyEndpoint
from vfl.wire import SPLIT_TRAIN

LARGE = 1_000_000
SHARED = 0.8


def holder_ids(size: int, holders: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Each holder's N IDs: a common 80 %, the rest from a pool only some holders draw from."""
    universe = np.array([f"customer-{i:09d}" for i in range(int(size * 1.25))])
    common = universe[: int(size * SHARED)]
    rest = universe[len(common) :]
    return [
        rng.permutation(np.concatenate([common, rng.choice(rest, size - len(common), False)]))
        for _ in range(holders)
    ]


def one_alignment(size: int, parties: int, seed: int) -> tuple[float, float]:
    """Wall and CPU seconds of one alignment of ``parties + 1`` holders of ``size`` IDs each."""
    ids = holder_ids(size, parties + 1, np.random.default_rng(seed))
    with tempfile.TemporaryDirectory(prefix="vfl-bench-psi-") as folder:
        runtimes = {
            p: PartyRuntime(
                p,
                {SPLIT_TRAIN: HolderSplit(ids[p], pd.DataFrame({"x": np.zeros(size)}))},
                PartyState(Path(folder) / f"party{p}", resume=False),
            )
            for p in range(1, parties + 1)
        }
        control = LocalControl({p: PartyEndpoint(p, r.handle) for p, r in runtimes.items()})
        start, cpu = time.perf_counter(), time.process_time()
        alignment = align(control, {SPLIT_TRAIN: ids[0]})
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert len(alignment.rows[SPLIT_TRAIN]) >= int(size * SHARED)
    return seconds, cpu


def per_element_costs(count: int = 10_000) -> dict[str, float]:
    """Microseconds per element of hashing and of blinding, over ``count`` IDs."""
    values = id_bytes(np.array([f"customer-{i:09d}" for i in range(count)]))
    start = time.perf_counter()
    points = hash_many(values)
    hashed = time.perf_counter()
    blind(points, new_scalar())
    blinded = time.perf_counter()
    return {
        "hash_us": round((hashed - start) / count * 1e6, 2),
        "blind_us": round((blinded - hashed) / count * 1e6, 2),
    }


def primitive_costs(count: int = 2_000, rounds: int = 5) -> dict[str, float]:
    """Microseconds per element, one thread: this version's group operations and the old ones."""
    values = id_bytes(np.array([f"customer-{i:09d}" for i in range(count)]))
    old_scalar = bindings.crypto_core_ed25519_scalar_reduce(os.urandom(64))
    new_scalar = psi.new_scalar()
    timings: dict[str, list[float]] = {k: [] for k in ("hash", "blind", "old_hash", "old_blind")}
    previous = os.environ.get("VFL_PSI_THREADS")
    os.environ["VFL_PSI_THREADS"] = "1"
    try:
        for _ in range(rounds):
            start = time.perf_counter()
            points = hash_many(values)
            middle = time.perf_counter()
            blind(points, new_scalar)
            end = time.perf_counter()
            timings["hash"].append(middle - start)
            timings["blind"].append(end - middle)
            start = time.perf_counter()
            old = [_old_hash(value) for value in values]
            middle = time.perf_counter()
            for point in old:
                bindings.crypto_scalarmult_ed25519_noclamp(old_scalar, point)
            end = time.perf_counter()
            timings["old_hash"].append(middle - start)
            timings["old_blind"].append(end - middle)
    finally:
        if previous is None:
            del os.environ["VFL_PSI_THREADS"]
        else:
            os.environ["VFL_PSI_THREADS"] = previous
    us = {k: round(statistics.median(v) / count * 1e6, 2) for k, v in timings.items()}
    us["hash_ratio"] = round(us["hash"] / us["old_hash"], 3)
    us["blind_ratio"] = round(us["blind"] / us["old_blind"], 3)
    return us


def _old_hash(value: bytes) -> bytes:
    """The edwards25519 hash of the version before: two Elligator 2 maps, added."""
    digest = hashlib.sha512(b"vfl-psi-v1/edwards25519/" + value).digest()
    first = bindings.crypto_core_ed25519_from_uniform(digest[:32])
    second = bindings.crypto_core_ed25519_from_uniform(digest[32:])
    point: bytes = bindings.crypto_core_ed25519_add(first, second)
    return point


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, LARGE])
    parser.add_argument("--parties", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--repeats-large", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    results = []
    costs = per_element_costs()
    print(f"per element: {costs} ({workers()} threads per holder)")
    primitives = primitive_costs()
    print(f"one thread, per element (old: edwards25519): {primitives}")
    for size in args.sizes:
        repeats = args.repeats_large if size >= LARGE else args.repeats
        measured = [one_alignment(size, args.parties, seed) for seed in range(repeats)]
        times = [wall for wall, _ in measured]
        median = statistics.median(times)
        row = {
            "ids": size,
            "holders": args.parties + 1,
            "runs": repeats,
            "align_s": round(median, 3),
            "us_per_id": round(median / size * 1e6, 1),
            "s_per_10k": round(median / size * 1e4, 3),
            "all_s": [round(t, 3) for t in times],
            "cpu_s": round(statistics.median(cpu for _, cpu in measured), 3),
        }
        results.append(row)
        print(json.dumps(row))
    report = {
        "machine": {"platform": platform.platform(), "processor": platform.processor()},
        "threads": workers(),
        **costs,
        "primitives": primitives,
        "sizes": results,
    }
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
