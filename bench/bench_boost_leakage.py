"""Label inference by a passive holder from the instance spaces SecureBoost shows it (Adult).

SecureBoost trains on ``--rows`` Adult training rows with 3 holders (the column groups of
``examples/adult_3party.toml``); passive holder ``--spy`` follows the protocol and records every
row set it is sent (``vfl.boost.leakage.InstanceSpaceSpy``). It knows the labels of a share
``--known`` of the rows from elsewhere (drawn at random) and scores every other row
(``infer_labels``). Reported, on the rows whose labels it does not know: the AUC of that
inference (all trees, and the first tree alone), and two baselines: what it learns with the same
known labels from its own columns alone (XGBoost) and chance (0.5); plus the label holder's own
training AUC (an upper reference).

The key is 512 bits (``insecure_test_key``) to keep this cheap: the key's size changes neither
the trees nor the row sets sent (``tests/boost/test_protocol.py``: SecureBoost's trees equal the
plaintext reference's for any key), so the leakage measured is that of a 2048-bit run.

    nice .venv/bin/python bench/bench_boost_leakage.py --rows 5000 --seeds 0 1 2 \\
        --out bench/results/secureboost/leakage
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import xgboost as xgb

from vfl.boost import BoostParams
from vfl.boost.active import ActiveBooster
from vfl.boost.leakage import InstanceSpaceSpy, infer_labels
from vfl.boost.link import local_link
from vfl.boost.paillier import KeyPair
from vfl.boost.passive import PassiveBooster
from vfl.data import load_dataset
from vfl.data.partition import make_partition
from vfl.results.metrics import roc_auc

GROUPS = [
    ["age", "sex", "race", "native-country", "marital-status", "relationship"],
    ["workclass", "occupation", "hours-per-week", "education", "education-num"],
    ["capital-gain", "capital-loss", "fnlwgt"],
]


def one_seed(seed: int, args: argparse.Namespace) -> dict[str, Any]:
    dataset = load_dataset("adult")
    partition = make_partition(dataset, "columns", 3, groups=GROUPS)
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(len(dataset.train.labels), args.rows, replace=False))
    labels = dataset.train.labels.astype(np.float64)[chosen]
    blocks = {
        p + 1: b.astype(np.float64)[chosen]
        for p, b in enumerate(partition.blocks(dataset.train.features))
    }
    params = BoostParams(num_trees=args.trees, max_depth=args.depth, max_bin=32)
    holders = {
        p: (InstanceSpaceSpy if p == args.spy else PassiveBooster)(
            p, blocks[p], max_bin=32, insecure_test_key=True
        )
        for p in (2, 3)
    }
    keys = KeyPair.generate(512, insecure_test_key=True)
    active = ActiveBooster(1, labels, blocks[1], params, keys, workers=1)
    link = local_link(holders)
    active.connect(link, [2, 3])
    active.fit(link)
    spy = holders[args.spy]
    assert isinstance(spy, InstanceSpaceSpy)
    known = np.sort(rng.choice(args.rows, round(args.known * args.rows), replace=False))
    unknown = np.setdiff1d(np.arange(args.rows), known)
    scores = infer_labels(spy.spaces, args.rows, known, labels[known])
    own = xgb.train(
        {"objective": "binary:logistic", "max_depth": 3, "nthread": 1},
        xgb.DMatrix(blocks[args.spy][known], label=labels[known]),
        num_boost_round=20,
    ).predict(xgb.DMatrix(blocks[args.spy][unknown]))
    return {
        "seed": seed,
        "rows": args.rows,
        "known_labels": len(known),
        "spy": args.spy,
        "auc_inference_from_instance_spaces": roc_auc(labels[unknown], scores[unknown]),
        "auc_spy_own_columns_xgboost": roc_auc(labels[unknown], own),
        "auc_first_tree_only": roc_auc(
            labels[unknown],
            infer_labels({0: spy.spaces[0]}, args.rows, known, labels[known])[unknown],
        ),
        "auc_label_holder_model_train": roc_auc(labels, active.objective.output(active.margins)),
        "row_sets_seen_per_tree": [len(spy.spaces[t]) for t in sorted(spy.spaces)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--trees", type=int, default=10)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--known", type=float, default=0.01, help="share of labels the spy knows")
    parser.add_argument("--spy", type=int, choices=[2, 3], default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results/secureboost/leakage"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        path = args.out / f"spy{args.spy}_known{args.known}_seed{seed}.json"
        if path.exists():
            continue
        result = one_seed(seed, args)
        path.write_text(
            json.dumps({"args": vars(args) | {"out": str(args.out)}, "result": result}, indent=2)
            + "\n"
        )
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
