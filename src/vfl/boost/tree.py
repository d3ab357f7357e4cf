"""Trees as the label holder keeps them, and split rules as each owner keeps its own.

The label holder knows every tree's shape, which holder owns each split and the owner's record
number for it, and every leaf weight. Only the owner knows a split's column and threshold: its
``SplitTable`` maps the record number to the rule (SecureBoost's lookup table, Cheng et al. 2019,
section 4).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from vfl.boost.binning import Binning
from vfl.errors import ProtocolError

LEAF = -1


@dataclass
class Node:
    """One node of a tree.

    Attributes:
        depth: 0 at the root.
        owner: The party whose column splits this node; ``LEAF`` for a leaf.
        record: The owner's record number of the split rule.
        left: Index of the left child in the tree's node list (``LEAF`` for a leaf).
        right: Index of the right child.
        weight: The leaf weight (learning rate applied); 0 for inner nodes.
    """

    depth: int
    owner: int = LEAF
    record: int = LEAF
    left: int = LEAF
    right: int = LEAF
    weight: float = 0.0

    @property
    def is_leaf(self) -> bool:
        """Whether this node has no split."""
        return self.owner == LEAF


@dataclass
class Tree:
    """A tree's nodes, the root first."""

    nodes: list[Node] = field(default_factory=lambda: [Node(depth=0)])

    def split(self, index: int, owner: int, record: int) -> tuple[int, int]:
        """Make node ``index`` an inner node; returns its new children's indices."""
        node = self.nodes[index]
        node.owner, node.record = owner, record
        node.left, node.right = len(self.nodes), len(self.nodes) + 1
        self.nodes += [Node(depth=node.depth + 1), Node(depth=node.depth + 1)]
        return node.left, node.right

    def leaf_weights(self) -> npt.NDArray[np.float64]:
        """Every node's weight (0 for inner nodes), by node index."""
        return np.array([node.weight for node in self.nodes], dtype=np.float64)


@dataclass(frozen=True)
class SplitRule:
    """A split an owner keeps: rows with ``x < threshold`` go left, missing values by default.

    Attributes:
        column: The owner's column index.
        bin: The last bin that goes left (its training rows' codes are ``<= bin``).
        threshold: The cut value after that bin.
        missing_left: Where a missing value (NaN) goes.
    """

    column: int
    bin: int
    threshold: float
    missing_left: bool

    def goes_left(self, values: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        """Which of ``values`` (this rule's column) go left."""
        with np.errstate(invalid="ignore"):
            left = values < self.threshold
        return np.where(np.isnan(values), self.missing_left, left)


@dataclass
class SplitTable:
    """One owner's split rules, by record number (the order they were made)."""

    rules: list[SplitRule] = field(default_factory=list)

    def add(self, binning: Binning, column: int, bin_index: int, missing_left: bool) -> int:
        """Record the split "bins ``<= bin_index`` of ``column`` go left"; returns its number."""
        threshold = binning.columns[column].threshold(bin_index)
        self.rules.append(SplitRule(column, bin_index, threshold, missing_left))
        return len(self.rules) - 1

    def rule(self, record: int) -> SplitRule:
        """The rule with number ``record``."""
        if not 0 <= record < len(self.rules):
            raise ProtocolError(
                f"split record {record} is unknown here; this holder has records"
                f" 0..{len(self.rules) - 1}"
            )
        return self.rules[record]

    def goes_left(self, record: int, features: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        """Which rows of ``features`` (this owner's columns) go left at split ``record``."""
        rule = self.rule(record)
        return rule.goes_left(features[:, rule.column])
