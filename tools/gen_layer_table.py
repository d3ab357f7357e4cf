"""Print the layer table of docs/architecture.md from the import graph and the layer contract.

.venv/bin/python tools/gen_layer_table.py

Each row is one layer of the import-linter contract in pyproject.toml (top to bottom), its
folders, and the lower folders their modules really import (measured with grimp, the graph
library import-linter uses), so the table cannot drift from the code.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def contract_layers() -> list[list[str]]:
    """The layers of the contract, top first, each a list of sibling folder names."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = config["tool"]["importlinter"]["contracts"][0]
    return [[name.strip() for name in layer.split("|")] for layer in contract["layers"]]


def imported_folders(graph: grimp.ImportGraph, folder: str, names: list[str]) -> list[str]:
    """The other top-level folders (or root modules) that ``vfl.<folder>`` imports directly."""
    return [
        other
        for other in names
        if other != folder
        and graph.direct_import_exists(
            importer=f"vfl.{folder}", imported=f"vfl.{other}", as_packages=True
        )
    ]


def render() -> str:
    """The Markdown table."""
    graph = grimp.build_graph("vfl")
    layers = contract_layers()
    names = [name for layer in layers for name in layer]
    rows = ["| layer | folder | imports (directly) |", "|---|---|---|"]
    for depth, layer in enumerate(layers, start=1):
        for folder in layer:
            kind = "module" if graph.find_children(f"vfl.{folder}") == set() else "folder"
            shown = f"`{folder}.py`" if kind == "module" else f"`{folder}/`"
            uses = ", ".join(f"`{o}`" for o in imported_folders(graph, folder, names)) or "-"
            rows.append(f"| {depth} | {shown} | {uses} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(render(), end="")
