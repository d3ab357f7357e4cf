"""A small SecureBoost run config for the tree-run tests: 3 holders of a 200-row table.

A 2048-bit key (the least a config accepts) and 150-odd training rows keep a tree under a
second of encryption; ``workers = 1`` encrypts in the test's own process.
"""

from __future__ import annotations

from pathlib import Path

from tests.test_cli import write_table


def tree_config(folder: Path, *, trees: int = 3, rows: int = 200, label_party: int = 1) -> Path:
    """Write the table and a ``secureboost`` config reading it; returns the config's path."""
    table = write_table(folder / "credit.csv", rows=rows)
    config = folder / "trees.toml"
    lines = [
        "[data]",
        'name = "table"',
        f'path = "{table}"',
        'label = "default"',
        'id_column = "id"',
        "[partition]",
        'scheme = "columns"',
        "num_parties = 3",
        'groups = [["income", "age"], ["debt"], ["region"]]',
        "[protocol]",
        'name = "secureboost"',
        f"active_party = {label_party}",
        "[boost]",
        f"num_trees = {trees}",
        "max_depth = 3",
        "max_bin = 16",
        "workers = 1",
        "[output]",
        f'dir = "{folder / "runs"}"',
        "progress = false",
    ]
    config.write_text("\n".join(lines) + "\n")
    return config
