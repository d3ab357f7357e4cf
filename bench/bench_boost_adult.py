"""SecureBoost on Adult (3 holders) against the plaintext reference and centralized XGBoost.

For each seed it draws the same ``--rows`` of Adult's 32,561 training rows (without replacement,
``numpy.random.default_rng(seed)``; ``--rows 0`` takes them all) for all three models, trains

- SecureBoost in one process (every holder its own object, real Paillier keys from the OS),
- the plaintext reference trees (``vfl.boost.fit_reference``),
- XGBoost ``hist`` on the concatenated columns with the same hyper-parameters,

and scores each on Adult's full test split. It checks that SecureBoost's trees equal the
reference's and its test predictions are bit-identical, and writes per seed a JSON file (AUCs,
per-tree seconds by phase, bytes, ciphertexts) plus ``summary.md`` under ``--out``. A seed whose
file exists is skipped, so an interrupted run continues.

Holders as ``examples/adult_3party.toml`` partitions Adult: party 1 (demographics, and the
labels), party 2 (employment, education), party 3 (capital, fnlwgt).

    nice .venv/bin/python bench/bench_boost_adult.py --seeds 0 1 2 --rows 8000 --trees 10 \\
        --depth 3 --max-bin 32 --out bench/results/secureboost/adult_8000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import xgboost as xgb

from vfl.boost import (
    BoostParams,
    SecureBoostRun,
    fit_reference,
    secureboost_structure,
    train_secureboost,
)
from vfl.boost.timing import PHASES
from vfl.data import load_dataset
from vfl.data.partition import make_partition
from vfl.results.metrics import roc_auc

GROUPS = [
    ["age", "sex", "race", "native-country", "marital-status", "relationship"],
    ["workclass", "occupation", "hours-per-week", "education", "education-num"],
    ["capital-gain", "capital-loss", "fnlwgt"],
]


def adult_blocks() -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray, np.ndarray]:
    dataset = load_dataset("adult")
    partition = make_partition(dataset, "columns", 3, groups=GROUPS)
    train = [b.astype(np.float64) for b in partition.blocks(dataset.train.features)]
    test = [b.astype(np.float64) for b in partition.blocks(dataset.test.features)]
    return train, test, dataset.train.labels.astype(np.float64), dataset.test.labels


def xgboost_auc(
    params: BoostParams, base_score: float, train: np.ndarray, labels: np.ndarray, test: np.ndarray
) -> tuple[float, np.ndarray]:
    booster = xgb.train(
        {
            "objective": params.objective,
            "tree_method": "hist",
            "max_depth": params.max_depth,
            "eta": params.learning_rate,
            "lambda": params.reg_lambda,
            "gamma": params.gamma,
            "min_child_weight": params.min_child_weight,
            "max_bin": params.max_bin,
            "base_score": base_score,
            "nthread": 1,
        },
        xgb.DMatrix(train, label=labels),
        num_boost_round=params.num_trees,
    )
    return booster, booster.predict(xgb.DMatrix(test))


def one_seed(seed: int, args: argparse.Namespace, params: BoostParams) -> dict[str, Any]:
    train, test, y_train, y_test = adult_blocks()
    count = args.rows or len(y_train)
    rows = np.sort(np.random.default_rng(seed).choice(len(y_train), count, replace=False))
    blocks = {p + 1: b[rows] for p, b in enumerate(train)}
    test_blocks = {p + 1: b for p, b in enumerate(test)}
    labels = y_train[rows]
    load_before = os.getloadavg()
    started = time.perf_counter()
    run = train_secureboost(labels, blocks, params, key_bits=args.key_bits, workers=args.workers)
    secure_seconds = time.perf_counter() - started
    secure = run.predict("test", test_blocks)
    reference = fit_reference(labels, blocks, params)
    plain = reference.objective.output(reference.predict_margins(test_blocks))
    tables = {1: run.active.splits, **{p: h.splits for p, h in run.passives.items()}}
    same_trees = all(
        secureboost_structure(t, tables) == r.structure()
        for t, r in zip(run.active.trees, reference.trees, strict=True)
    )
    _, xgb_scores = xgboost_auc(
        params,
        run.active.base_score,
        np.concatenate(list(blocks.values()), 1),
        labels,
        np.concatenate(list(test_blocks.values()), 1),
    )
    return {
        "seed": seed,
        "train_rows": len(rows),
        "auc_secureboost": roc_auc(y_test, secure),
        "auc_reference": roc_auc(y_test, plain),
        "auc_xgboost": roc_auc(y_test, xgb_scores),
        "trees_equal_reference": same_trees,
        "max_abs_prediction_diff_reference": float(np.abs(secure - plain).max()),
        "max_abs_prediction_diff_xgboost": float(np.abs(secure - xgb_scores).max()),
        "train_seconds": secure_seconds,
        "load_average_before_after": [load_before, os.getloadavg()],
        "trees": [
            {
                "tree": r.tree,
                "seconds": r.seconds,
                "bytes_down": r.bytes_down,
                "bytes_up": r.bytes_up,
                "ciphertexts_up": r.ciphertexts_up,
                "transport_seconds": r.transport_seconds,
                "leaves": r.leaves,
            }
            for r in run.reports
        ],
        "bytes_by_message": bytes_by_message(run),
        "passive_seconds": {p: dict(h.seconds) for p, h in run.passives.items()},
    }


def bytes_by_message(run: SecureBoostRun) -> dict[str, dict[str, int]]:
    """The ledger's frame bytes of training, by direction and message kind."""
    totals: dict[str, dict[str, int]] = {"down": {}, "up": {}}
    for key, count in run.link.transport.ledger.rows():
        if key.phase == "train":
            kinds = totals[key.direction]
            kinds[key.kind] = kinds.get(key.kind, 0) + count.bytes
    return totals


def summary(results: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        f"# SecureBoost on Adult, 3 holders ({meta['trees']} trees, depth {meta['depth']},"
        f" max_bin {meta['max_bin']}, {meta['key_bits']}-bit Paillier, {meta['workers']} workers)",
        "",
        "| seed | rows | AUC SecureBoost | AUC reference | AUC XGBoost | diff vs XGBoost |"
        " trees = reference | s / tree |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        per_tree = r["train_seconds"] / len(r["trees"])
        lines.append(
            f"| {r['seed']} | {r['train_rows']} | {r['auc_secureboost']:.5f} |"
            f" {r['auc_reference']:.5f} | {r['auc_xgboost']:.5f} |"
            f" {r['auc_secureboost'] - r['auc_xgboost']:+.5f} | {r['trees_equal_reference']} |"
            f" {per_tree:.1f} |"
        )
    lines += ["", "Median seconds per tree by phase (all seeds, all trees):", ""]
    lines += ["| " + " | ".join(PHASES) + " |", "|" + "---|" * len(PHASES)]
    trees = [t for r in results for t in r["trees"]]
    medians = [statistics.median(t["seconds"].get(p, 0.0) for t in trees) for p in PHASES]
    lines.append("| " + " | ".join(f"{m:.2f}" for m in medians) + " |")
    down = statistics.median(t["bytes_down"] for t in trees)
    up = statistics.median(t["bytes_up"] for t in trees)
    lines += [
        "",
        f"Median frame bytes per tree (the ledger's): {down:,.0f} down, {up:,.0f} up.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--trees", type=int, default=10)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--max-bin", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.3)
    parser.add_argument("--rows", type=int, default=8000, help="training rows (0: all)")
    parser.add_argument("--key-bits", type=int, default=2048)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--out", type=Path, default=Path("bench/results/secureboost/adult_8000"))
    args = parser.parse_args()
    params = BoostParams(
        num_trees=args.trees,
        max_depth=args.depth,
        max_bin=args.max_bin,
        learning_rate=args.learning_rate,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {
        "trees": args.trees,
        "depth": args.depth,
        "max_bin": args.max_bin,
        "learning_rate": args.learning_rate,
        "rows": args.rows,
        "key_bits": args.key_bits,
        "workers": args.workers,
        "machine": platform.platform(),
        "python": platform.python_version(),
    }
    results = []
    for seed in args.seeds:
        path = args.out / f"seed{seed}.json"
        if path.exists():
            results.append(json.loads(path.read_text())["result"])
            continue
        result = one_seed(seed, args, params)
        path.write_text(json.dumps({"meta": meta, "result": result}, indent=2) + "\n")
        print(json.dumps({k: v for k, v in result.items() if k not in ("trees",)}), flush=True)
        results.append(result)
    (args.out / "summary.md").write_text(summary(results, meta))
    print(summary(results, meta))


if __name__ == "__main__":
    main()
