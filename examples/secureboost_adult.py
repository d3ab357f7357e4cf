"""SecureBoost from Python: UCI Adult, 3 holders, against centralized XGBoost (docs/secureboost.md).

.venv/bin/python examples/secureboost_adult.py [--rows 2000] [--trees 5]

Party 1 holds the labels and the demographic columns, party 2 the employment and education
columns, party 3 the capital and fnlwgt columns (``examples/adult_3party.toml``'s groups). Every
holder runs in this process; their messages are vfl wire frames through the in-process
transport, so the bytes printed are the frames a deployment would send. The key is a fresh
2048-bit Paillier key.
"""

from __future__ import annotations

import argparse

import numpy as np
import xgboost as xgb

import vfl
from vfl.boost import BoostParams, train_secureboost
from vfl.results.metrics import roc_auc

GROUPS = [
    ["age", "sex", "race", "native-country", "marital-status", "relationship"],
    ["workclass", "occupation", "hours-per-week", "education", "education-num"],
    ["capital-gain", "capital-loss", "fnlwgt"],
]


def main() -> None:
    """Train SecureBoost and XGBoost on the same rows; print both test AUCs and the cost."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2000, help="training rows (a random sample)")
    parser.add_argument("--trees", type=int, default=5)
    args = parser.parse_args()

    dataset = vfl.load_dataset("adult")  # after `vfl data fetch adult`
    partition = vfl.make_partition(dataset, "columns", 3, groups=GROUPS)
    rows = np.sort(np.random.default_rng(0).choice(len(dataset.train.labels), args.rows, False))
    train = {
        p + 1: b[rows].astype(np.float64)
        for p, b in enumerate(partition.blocks(dataset.train.features))
    }
    test = {
        p + 1: b.astype(np.float64) for p, b in enumerate(partition.blocks(dataset.test.features))
    }
    labels = dataset.train.labels[rows].astype(np.float64)
    params = BoostParams(num_trees=args.trees, max_depth=3, learning_rate=0.3, max_bin=32)

    run = train_secureboost(labels, train, params, active_party=1)
    secure = run.predict("test", test)

    booster = xgb.train(
        {
            "objective": "binary:logistic",
            "tree_method": "hist",
            "max_depth": params.max_depth,
            "eta": params.learning_rate,
            "lambda": params.reg_lambda,
            "min_child_weight": params.min_child_weight,
            "max_bin": params.max_bin,
            "base_score": run.active.base_score,
        },
        xgb.DMatrix(np.concatenate(list(train.values()), axis=1), label=labels),
        num_boost_round=params.num_trees,
    )
    central = booster.predict(xgb.DMatrix(np.concatenate(list(test.values()), axis=1)))

    y = dataset.test.labels
    print(f"test AUC: SecureBoost {roc_auc(y, secure):.4f}, XGBoost {roc_auc(y, central):.4f}")
    for report in run.reports:
        seconds = ", ".join(f"{k} {v:.1f}" for k, v in report.seconds.items())
        print(
            f"tree {report.tree}: {report.bytes_down:,} bytes down, {report.bytes_up:,} up;"
            f" seconds: {seconds}"
        )


if __name__ == "__main__":
    main()
