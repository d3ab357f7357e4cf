"""SecureBoost's cost per tree on Adult as rows, bins and holders grow (one process, real keys).

Each variant trains ``--trees`` trees with a fresh 2048-bit Paillier key on a sample of Adult's
training rows (``numpy.random.default_rng(0)``, drawn with replacement when more rows are asked
for than Adult has) and records per tree: seconds by phase (the label holder's encryption,
the holders' histograms, decryption, split finding, transport), the ledger's frame bytes
each way and by message kind, and the ciphertexts decrypted. Variants:

- rows: ``--rows`` at ``--max-bin 32`` and 3 holders;
- bins: ``--bins`` at ``--base-rows`` rows and 3 holders;
- holders: 2, 3 and 4 holders at ``--base-rows`` rows and 32 bins (Adult's column groups of
  ``examples/adult_3party.toml``, merged into 2 or split into 4).

One JSON per variant under ``--out`` (an existing one is kept and skipped).

    nice .venv/bin/python bench/bench_boost_scaling.py --rows 2000 5000 10000 --bins 16 32 64 \\
        --base-rows 5000 --trees 2 --out bench/results/secureboost/scaling
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from vfl.boost import BoostParams, SecureBoostRun, train_secureboost
from vfl.data import load_dataset
from vfl.data.partition import make_partition

DEMOGRAPHICS = ["age", "sex", "race", "native-country", "marital-status", "relationship"]
EMPLOYMENT = ["workclass", "occupation", "hours-per-week"]
EDUCATION = ["education", "education-num"]
MONEY = ["capital-gain", "capital-loss", "fnlwgt"]
GROUPS = {
    2: [DEMOGRAPHICS, EMPLOYMENT + EDUCATION + MONEY],
    3: [DEMOGRAPHICS, EMPLOYMENT + EDUCATION, MONEY],
    4: [DEMOGRAPHICS, EMPLOYMENT, EDUCATION, MONEY],
}


def blocks_of(holders: int, rows: int) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    dataset = load_dataset("adult")
    partition = make_partition(dataset, "columns", holders, groups=GROUPS[holders])
    train = partition.blocks(dataset.train.features)
    total = len(dataset.train.labels)
    chosen = np.random.default_rng(0).choice(total, rows, replace=rows > total)
    labels = dataset.train.labels.astype(np.float64)[chosen]
    return labels, {p + 1: b.astype(np.float64)[chosen] for p, b in enumerate(train)}


def bytes_by_kind(run: SecureBoostRun, tree: int) -> dict[str, int]:
    totals: dict[str, int] = {}
    for key, count in run.link.transport.ledger.rows():
        if key.phase == "train" and key.round == tree:
            totals[key.kind] = totals.get(key.kind, 0) + count.bytes
    return totals


def variant(holders: int, rows: int, max_bin: int, args: argparse.Namespace) -> dict[str, Any]:
    labels, blocks = blocks_of(holders, rows)
    params = BoostParams(num_trees=args.trees, max_depth=args.depth, max_bin=max_bin)
    load_before = os.getloadavg()
    started = time.perf_counter()
    run = train_secureboost(labels, blocks, params, key_bits=2048, workers=args.workers)
    seconds = time.perf_counter() - started
    return {
        "holders": holders,
        "rows": rows,
        "max_bin": max_bin,
        "trees": args.trees,
        "depth": args.depth,
        "columns": {p: int(b.shape[1]) for p, b in blocks.items()},
        "bins": {p: int(sum(h.bins)) for p, h in run.passives.items()},
        "train_seconds": seconds,
        "load_average_before_after": [load_before, os.getloadavg()],
        "per_tree": [
            {
                "tree": r.tree,
                "seconds": r.seconds,
                "transport_seconds": r.transport_seconds,
                "bytes_down": r.bytes_down,
                "bytes_up": r.bytes_up,
                "bytes_by_kind": bytes_by_kind(run, r.tree),
                "ciphertexts_up": r.ciphertexts_up,
                "leaves": r.leaves,
            }
            for r in run.reports
        ],
        "passive_seconds": {p: dict(h.seconds) for p, h in run.passives.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[2000, 5000, 10000])
    parser.add_argument("--bins", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--holders", type=int, nargs="+", default=[2, 3, 4])
    parser.add_argument("--base-rows", type=int, default=5000)
    parser.add_argument("--trees", type=int, default=2)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--out", type=Path, default=Path("bench/results/secureboost/scaling"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    plan = {(3, rows, 32) for rows in args.rows}
    plan |= {(3, args.base_rows, max_bin) for max_bin in args.bins}
    plan |= {(holders, args.base_rows, 32) for holders in args.holders}
    meta = {
        "machine": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    for holders, rows, max_bin in sorted(plan, key=lambda v: (v[1], v[0], v[2])):
        path = args.out / f"holders{holders}_rows{rows}_bins{max_bin}.json"
        if path.exists():
            continue
        result = variant(holders, rows, max_bin, args)
        path.write_text(json.dumps({"meta": meta, "result": result}, indent=2) + "\n")
        print(path, f"{result['train_seconds'] / args.trees:.1f} s/tree", flush=True)


if __name__ == "__main__":
    main()
