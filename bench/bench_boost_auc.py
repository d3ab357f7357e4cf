"""SecureBoost's test AUC through ``vfl run`` and ``vfl launch`` against centralized XGBoost.

Issue 31's acceptance, as the user runs it: for each seed it draws ``--rows`` of Adult's 32,561
training rows (``numpy.random.default_rng(seed)``, without replacement) and trains on them

- ``run``: ``vfl run examples/secureboost_adult.toml`` as a process, the rows chosen by
  ``--set data.max_train_samples=ROWS --set data.subsample_seed=SEED`` (every holder in one
  process; party 1 holds the labels and the demographics);
- ``launch``: ``vfl launch`` of ``examples/deploy/secureboost`` copied to a temporary folder, its
  tables written by the example's ``make_data.py --rows ROWS --seed SEED`` (which draws the same
  rows), with a test PKI from ``vfl certs``: a server process (the labels, no columns) and three
  party processes over gRPC with mutual TLS, PSI first;
- centralized XGBoost (``tree_method = "hist"``) on the same rows with all columns in one place
  and the same hyper-parameters (``base_score`` the mean training label, as SecureBoost's);

and scores each on Adult's whole test split (16,281 rows). Per mode and seed it writes
``OUT/auc_<mode>_<seed>.json`` (both AUCs, their difference, the rows, trees, seconds and the
machine's load); a file that exists is kept and its run skipped, so an interrupted run continues.

    vfl data fetch adult
    nice .venv/bin/python bench/bench_boost_auc.py --seeds 0 1 2 --rows 1000 --trees 3

(about 4 minutes on 2 shared cores; ``--rows 2000 --trees 5 --out
bench/results/secureboost/auc_2000`` about 10); a larger run, for example ``--rows 5000
--trees 10 --out bench/results/secureboost/auc_5000``, takes hours there (the label holder
encrypts every row for every tree: about 5 ms of CPU per row).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench_boost_adult import adult_blocks, xgboost_auc
from vfl.boost import BoostParams
from vfl.results.metrics import roc_auc

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "deploy" / "secureboost"
SIMULATED = ROOT / "examples" / "secureboost_adult.toml"
MODES = ("run", "launch")


def vfl(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``vfl ARGS`` as a process of its own; stops the bench, with its stderr, if it fails."""
    command = [sys.executable, "-m", "vfl.cli", *args]
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False)
    if done.returncode != 0:
        raise SystemExit(f"vfl {' '.join(args)} failed:\n{done.stderr[-4000:]}")
    return done


def boost_settings(args: argparse.Namespace) -> list[str]:
    """The ``--set`` flags of the hyper-parameters, the same for both modes."""
    settings = {
        "boost.num_trees": args.trees,
        "boost.max_depth": args.depth,
        "boost.learning_rate": args.learning_rate,
        "boost.max_bin": args.max_bin,
    }
    return [flag for key, value in settings.items() for flag in ("--set", f"{key}={value}")]


def through_run(seed: int, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """``vfl run`` of the Adult example on the seed's rows; its summary."""
    run_dir = folder / f"run-{seed}"
    rows = ["--set", f"data.max_train_samples={args.rows}", "--set", f"data.subsample_seed={seed}"]
    vfl("run", str(SIMULATED), "--run-dir", str(run_dir), *rows, *boost_settings(args), "--quiet")
    summary: dict[str, Any] = json.loads((run_dir / "summary.json").read_text())
    return summary


def through_launch(seed: int, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """``vfl launch`` of the deployment example, copied into ``folder``, on the seed's rows."""
    deployment = folder / f"launch-{seed}"
    deployment.mkdir()
    for name in ("RUN.toml", "party1.toml", "party2.toml", "party3.toml"):
        shutil.copy(EXAMPLE / name, deployment / name)
    make_data = [sys.executable, str(EXAMPLE / "make_data.py"), "--out", "data"]
    made = subprocess.run(
        [*make_data, "--rows", str(args.rows), "--seed", str(seed)],
        capture_output=True,
        text=True,
        cwd=deployment,
        check=False,
    )
    if made.returncode != 0:
        raise SystemExit(f"make_data.py failed:\n{made.stderr}")
    vfl("certs", "--out", "certs", "--parties", "1", "2", "3", cwd=deployment)
    vfl("launch", "RUN.toml", *boost_settings(args), cwd=deployment)
    summary_path = deployment / "runs" / "secureboost-example" / "summary.json"
    summary: dict[str, Any] = json.loads(summary_path.read_text())
    return summary


def xgboost_on_rows(seed: int, args: argparse.Namespace) -> float:
    """Centralized XGBoost's test AUC on the seed's rows, all columns in one place."""
    train, test, y_train, y_test = adult_blocks()
    count = args.rows or len(y_train)
    rows = np.sort(np.random.default_rng(seed).choice(len(y_train), count, replace=False))
    params = BoostParams(
        num_trees=args.trees,
        max_depth=args.depth,
        learning_rate=args.learning_rate,
        max_bin=args.max_bin,
    )
    labels = y_train[rows]
    features = np.concatenate([block[rows] for block in train], axis=1)
    _, scores = xgboost_auc(
        params, float(labels.mean()), features, labels, np.concatenate(test, axis=1)
    )
    return roc_auc(y_test, scores)


def one(mode: str, seed: int, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    load_before = os.getloadavg()
    started = time.perf_counter()
    summary = (through_run if mode == "run" else through_launch)(seed, args, folder)
    seconds = time.perf_counter() - started
    secure = float(summary["final"]["test_auc"])
    reference = xgboost_on_rows(seed, args)
    return {
        "mode": mode,
        "seed": seed,
        "train_rows": args.rows,
        "test_rows": 16281,
        "trees": args.trees,
        "max_depth": args.depth,
        "learning_rate": args.learning_rate,
        "max_bin": args.max_bin,
        "auc_secureboost": secure,
        "auc_xgboost": reference,
        "difference": secure - reference,
        "within_0.002": abs(secure - reference) <= 0.002,
        "seconds": round(seconds, 1),
        "load_average_before_after": [load_before, os.getloadavg()],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--rows", type=int, default=1000, help="training rows (at least 1)")
    parser.add_argument("--trees", type=int, default=3)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--learning-rate", type=float, default=0.3)
    parser.add_argument("--max-bin", type=int, default=32)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/secureboost")
    args = parser.parse_args()
    if args.rows < 1 or args.trees < 1 or any(seed < 0 for seed in args.seeds):
        parser.error("--rows and --trees must be at least 1 and every seed at least 0")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="vfl-boost-auc-") as temporary:
        for seed in args.seeds:
            for mode in args.modes:
                target = args.out / f"auc_{mode}_{seed}.json"
                if target.exists():
                    print(f"{target} exists: kept, skipped", file=sys.stderr)
                    continue
                result = one(mode, seed, args, Path(temporary))
                target.write_text(json.dumps(result, indent=2) + "\n")
                print(
                    f"{mode} seed {seed}: SecureBoost {result['auc_secureboost']:.6f},"
                    f" XGBoost {result['auc_xgboost']:.6f} ({result['difference']:+.2e},"
                    f" {result['seconds']:.0f} s)",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
