"""A holder's trained knowledge as plain JSON values, and back: for checkpoints and bundles.

The label holder's is its trees (shape, each split's owner and record number, leaf weights),
its own split rules, base score and objective; a passive holder's is its split rules only (its
cut points and thresholds, by record number). Reading checks every field's type and range and
raises ``DataError`` naming what is wrong, so a damaged or foreign file never becomes a model.
"""

from __future__ import annotations

import math
from typing import Any

from vfl.boost.tree import LEAF, Node, SplitRule, SplitTable, Tree
from vfl.errors import DataError


def tree_to_plain(tree: Tree) -> list[list[float | int]]:
    """``[[depth, owner, record, left, right, weight], ...]``, the root first."""
    return [[n.depth, n.owner, n.record, n.left, n.right, n.weight] for n in tree.nodes]


def tree_from_plain(value: Any, what: str) -> Tree:
    """The tree ``tree_to_plain`` wrote; ``what`` names it in errors."""
    if not isinstance(value, list) or not value:
        raise DataError(f"{what} must be a non-empty list of nodes")
    nodes = []
    for index, item in enumerate(value):
        if not (isinstance(item, list) and len(item) == 6):
            raise DataError(f"{what} node {index} must be [depth, owner, record, left, right, w]")
        *ints, weight = item
        if not all(_is_int(v) for v in ints) or not _is_number(weight):
            raise DataError(f"{what} node {index} holds a value of the wrong type: {item}")
        depth, owner, record, left, right = ints
        inner = owner != LEAF
        children_ok = (
            (index < left < len(value) and index < right < len(value))  # no cycles
            if inner
            else (left == right == record == LEAF)
        )
        if depth < 0 or not children_ok:
            raise DataError(f"{what} node {index} is not a valid node: {item}")
        nodes.append(Node(depth, owner, record, left, right, float(weight)))
    return Tree(nodes)


def splits_to_plain(table: SplitTable) -> list[list[float | int | bool]]:
    """``[[column, bin, threshold, missing_left], ...]`` by record number."""
    return [[r.column, r.bin, r.threshold, r.missing_left] for r in table.rules]


def splits_from_plain(value: Any, what: str, width: int | None = None) -> SplitTable:
    """The split table ``splits_to_plain`` wrote; ``width``: the owner's number of columns."""
    if not isinstance(value, list):
        raise DataError(f"{what} must be a list of split rules")
    rules = []
    for record, item in enumerate(value):
        if not (isinstance(item, list) and len(item) == 4):
            raise DataError(f"{what} record {record} must be [column, bin, threshold, missing]")
        column, bin_index, threshold, missing = item
        valid = (
            _is_int(column)
            and _is_int(bin_index)
            and _is_number(threshold)
            and isinstance(missing, bool)
            and column >= 0
            and bin_index >= 0
            and (width is None or column < width)
        )
        if not valid:
            raise DataError(f"{what} record {record} is not a valid split rule: {item}")
        rules.append(SplitRule(column, bin_index, float(threshold), missing))
    return SplitTable(rules)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
