"""Write the example deployment's tables: a bank's labels and three parties' feature columns.

The holders know overlapping but different customers, each file in its own order, so that the
deployment's private set intersection has work to do. Run from anywhere:

    .venv/bin/python examples/deploy/make_data.py

It writes ``examples/deploy/data/*.csv`` (about 1 MB); certificates come from ``vfl certs``
(see ``docs/deployment.md``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
HOLDERS = {
    "labels": ["default"],
    "bank": ["income", "debt", "savings"],
    "telco": ["tenure", "monthly_bill", "contract"],
    "retail": ["age", "region", "purchases"],
}
SHARE = {"labels": 0.95, "bank": 0.9, "telco": 0.85, "retail": 0.9}


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


def main() -> None:
    """Write every holder's train and test table."""
    rng = np.random.default_rng(7)
    out = HERE / "data"
    out.mkdir(exist_ok=True)
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
    print(f"wrote {len(HOLDERS) * len(splits)} tables to {out}")


if __name__ == "__main__":
    main()
