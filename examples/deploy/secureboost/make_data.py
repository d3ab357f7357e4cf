"""Write the SecureBoost deployment example's tables: UCI Adult split by columns between 4 holders.

The server holds the labels (``income``); party 1 the demographics, party 2 the employment and
education columns, party 3 capital gain and loss and ``fnlwgt`` (the split of
``examples/adult_3party.toml``). Each row gets an ID (``a<row>`` in training, ``t<row>`` in test)
and every holder writes its rows in its own order, so that the deployment's private set
intersection has work to do. The example's configs read them from
``examples/deploy/secureboost/data``::

    vfl data fetch adult
    .venv/bin/python examples/deploy/secureboost/make_data.py --out examples/deploy/secureboost/data

``--rows`` takes a seeded subset of the 32,561 training rows (default 1,000: the encryption of a
tree costs the label holder about 5 ms of CPU per row; 0 takes all of them); the test split is
Adult's whole test file (16,281 rows). ``joined_test.csv`` holds the same test rows with every
holder's columns in one table: what ``vfl predict`` reads to score with all holders' bundles
gathered in one place (docs/secureboost.md). Existing tables are never overwritten unless you
pass ``--force``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from vfl.data.adult import ADULT_LABEL, read_adult_file
from vfl.data.fetch import data_dir

HOLDERS = {
    "labels": [ADULT_LABEL],
    "party1": ["age", "sex", "race", "native-country", "marital-status", "relationship"],
    "party2": ["workclass", "occupation", "hours-per-week", "education", "education-num"],
    "party3": ["capital-gain", "capital-loss", "fnlwgt"],
}
ID = "person_id"
JOINED = "joined_test"


def holder_tables(adult: Path, rows: int, seed: int) -> dict[str, dict[str, pd.DataFrame]]:
    """Per holder and split, its columns of the chosen rows with their IDs, in its own order."""
    rng = np.random.default_rng(seed)
    frames = {
        "train": read_adult_file(adult / "adult.data"),
        "test": read_adult_file(adult / "adult.test"),
    }
    if rows:
        chosen = np.sort(rng.choice(len(frames["train"]), size=rows, replace=False))
        frames["train"] = frames["train"].iloc[chosen]
    tables: dict[str, dict[str, pd.DataFrame]] = {}
    for split, frame in frames.items():
        prefix = "a" if split == "train" else "t"
        with_ids = frame.assign(**{ID: [f"{prefix}{i}" for i in frame.index]})
        for holder, columns in HOLDERS.items():
            order = rng.permutation(len(with_ids))
            tables.setdefault(holder, {})[split] = with_ids.iloc[order][[ID, *columns]]
    return tables


def joined(tables: dict[str, dict[str, pd.DataFrame]], split: str) -> pd.DataFrame:
    """Every holder's columns of ``split``'s rows in one table, in the label holder's order."""
    frame = tables["labels"][split]
    for holder in HOLDERS:
        if holder != "labels":
            frame = frame.merge(tables[holder][split], on=ID, how="left")
    return frame


def main(argv: Sequence[str] | None = None) -> int:
    """Write the tables; 1 (and nothing written) if one exists without ``--force``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("data"), help="folder of the tables")
    parser.add_argument("--rows", type=int, default=1000, help="training rows (0: all 32,561)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the subset and the orders")
    parser.add_argument("--force", action="store_true", help="replace existing tables")
    args = parser.parse_args(argv)
    if args.rows < 0:
        parser.error(f"--rows must be >= 0 (0: all), got {args.rows}")
    paths = {
        (holder, split): args.out / f"{holder}_{split}.csv"
        for holder in HOLDERS
        for split in ("train", "test")
    }
    paths[(JOINED, "")] = args.out / f"{JOINED}.csv"
    existing = [str(p) for p in paths.values() if p.exists()]
    if existing and not args.force:
        print(f"make_data.py: {existing[0]} exists; pass --force to replace", file=sys.stderr)
        return 1
    tables = holder_tables(data_dir() / "adult", args.rows, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    for (holder, split), path in paths.items():
        table = joined(tables, "test") if holder == JOINED else tables[holder][split]
        table.to_csv(path, index=False)
    print(f"wrote {len(paths)} tables to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
