"""Prediction: the label holder walks every tree, asking each split's owner which way rows go.

All trees advance one depth at a time, and each depth sends one ``RouteRequest`` per owner that
holds a split reached at that depth (every tree's queries together), so a batch of rows costs
``max_depth`` round trips whatever the number of trees. An owner learns which of its splits were
reached by which rows; the label holder learns each row's path, never a threshold.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from vfl.boost.link import Link
from vfl.boost.messages import RouteQuery, RouteReply, RouteRequest
from vfl.boost.tree import SplitTable, Tree
from vfl.errors import ProtocolError

Floats = npt.NDArray[np.float64]
Positions = npt.NDArray[np.int64]


def route(
    trees: Sequence[Tree],
    party: int,
    splits: SplitTable,
    own_features: Floats,
    link: Link,
    table: str,
) -> Positions:
    """``(trees, rows)``: the leaf each row reaches in each tree.

    Args:
        trees: The label holder's trees.
        party: The label holder's party id (the owner of ``splits``).
        splits: The label holder's own split rules.
        own_features: The label holder's columns of the rows to predict.
        link: The way to the other owners, who hold table ``table`` of the same rows.
        table: The name under which the other owners hold these rows.
    """
    positions = np.zeros((len(trees), len(own_features)), dtype=np.int64)
    depth = max((node.depth for tree in trees for node in tree.nodes), default=0)
    for _ in range(depth):
        pending: dict[int, list[tuple[int, npt.NDArray[np.int64], int]]] = {}
        for t, tree in enumerate(trees):
            for index in np.unique(positions[t]).tolist():
                node = tree.nodes[index]
                if node.is_leaf:
                    continue
                rows = np.flatnonzero(positions[t] == index)
                if node.owner == party:
                    left = splits.goes_left(node.record, own_features[rows])
                    positions[t, rows] = np.where(left, node.left, node.right)
                else:
                    pending.setdefault(node.owner, []).append((t, rows, index))
        _ask_owners(trees, positions, pending, link, table)
    return positions


def _ask_owners(
    trees: Sequence[Tree],
    positions: Positions,
    pending: dict[int, list[tuple[int, npt.NDArray[np.int64], int]]],
    link: Link,
    table: str,
) -> None:
    requests = {
        owner: RouteRequest(
            table,
            tuple(RouteQuery(trees[t].nodes[index].record, rows) for t, rows, index in queries),
        )
        for owner, queries in pending.items()
    }
    replies = link.request(requests) if requests else {}
    for owner, queries in pending.items():
        reply = replies.get(owner)
        if not isinstance(reply, RouteReply) or len(reply.left) != len(queries):
            raise ProtocolError(
                f"party {owner} answered {len(queries)} route queries with {reply!r}"
            )
        for (t, rows, index), left in zip(queries, reply.left, strict=True):
            mask = np.asarray(left)
            if mask.dtype != np.bool_ or mask.shape != rows.shape:
                raise ProtocolError(f"party {owner} did not give one boolean per queried row")
            node = trees[t].nodes[index]
            positions[t, rows] = np.where(mask, node.left, node.right)


def margins(trees: Sequence[Tree], positions: Positions, base_margin: float) -> Floats:
    """``base_margin`` plus every tree's leaf weight at each row's leaf."""
    total = np.full(positions.shape[1], base_margin, dtype=np.float64)
    for tree, leaves in zip(trees, positions, strict=True):
        total += tree.leaf_weights()[leaves]
    return total
