"""Write the example deployment's tables: a bank's labels and three parties' feature columns.

The holders know overlapping but different customers, each file in its own order, so that the
deployment's private set intersection has work to do. The example's configs
(``examples/deploy/RUN.toml`` and ``party*.toml``) read them from ``examples/deploy/data``::

    .venv/bin/python examples/deploy/make_data.py --out examples/deploy/data

Without ``--out`` the tables go to ``./data`` under the folder you run it from. Existing
tables are never overwritten unless you pass ``--force``. It writes 8 CSV files (about 1 MB);
certificates come from ``vfl certs`` (see ``docs/deployment.md``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

HOLDERS = {
    "labels": ["default"],
    "bank": ["income", "debt", "savings"],
    "telco": ["tenure", "monthly_bill", "contract"],
    "retail": ["age", "region", "purchases"],
}
SHARE = {"labels": 0.95, "bank": 0.9, "telco": 0.85, "retail": 0.9}
SPLITS = ("train", "test")


def customers(rows: int, *, prefix: str, rng: np.random.Generator) -> pd.DataFrame:
    """Synthetic customers whose default risk depends on every holder's columns."""
    frame = pd.DataFrame(
        {
            "customer_id": [f"{prefix}{i:06d}" for i in range(rows)],
            "income": rng.lognormal(10.5, 0.4, rows).round(2),
            "debt": rng.gamma(2.0, 5000.0, rows).round(2),
            "savings": rng.gamma(1.5, 4000.0, rows).round(2),
            "tenure": rng.integers(0, 120, rows),
            "monthly_bill": rng.normal(60, 20, rows).clip(5).round(2),
            "contract": rng.choice(["monthly", "yearly", "two-year"], rows),
            "age": rng.integers(18, 90, rows),
            "region": rng.choice(["north", "south", "east", "west"], rows),
            "purchases": rng.poisson(12, rows),
        }
    )
    score = (
        -np.log(frame["income"]) * 1.5
        + frame["debt"] / 10000
        - frame["savings"] / 8000
        - frame["tenure"] / 60
        + (frame["contract"] == "monthly") * 0.8
        + (frame["age"] - 50).abs() / 40
        + rng.normal(0, 0.7, rows)
    )
    frame["default"] = np.where(score > np.quantile(score, 0.7), "yes", "no")
    return frame


def table_paths(out: Path) -> list[Path]:
    """The files ``write_tables`` writes into ``out``."""
    return [out / f"{holder}_{split}.csv" for holder in HOLDERS for split in SPLITS]


def write_tables(out: Path) -> None:
    """Write every holder's train and test table into ``out`` (created if missing)."""
    rng = np.random.default_rng(7)
    out.mkdir(parents=True, exist_ok=True)
    splits = {
        "train": customers(8000, prefix="c", rng=rng),
        "test": customers(2000, prefix="t", rng=rng),
    }
    for holder, columns in HOLDERS.items():
        for split, table in splits.items():
            keep = rng.permutation(len(table))[: int(SHARE[holder] * len(table))]
            table.iloc[keep][["customer_id", *columns]].to_csv(
                out / f"{holder}_{split}.csv", index=False
            )


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``--out`` and ``--force``, refuse to overwrite tables, write them; the exit status."""
    parser = argparse.ArgumentParser(description="Write the example deployment's tables.")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("data"),
        help="folder for the tables (default: ./data under the folder you run this from)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite tables already there")
    args = parser.parse_args(argv)
    taken = [path for path in table_paths(args.out) if path.exists()]
    if taken and not args.force:
        names = ", ".join(path.name for path in taken)
        print(
            f"make_data.py: {args.out} already holds {names}; pass --force to overwrite them,"
            " or choose another --out",
            file=sys.stderr,
        )
        return 2
    write_tables(args.out)
    print(f"wrote {len(table_paths(args.out))} tables to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
