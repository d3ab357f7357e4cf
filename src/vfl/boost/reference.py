"""The centralized reference: the same trees grown in the clear from all columns in one place.

It shares with SecureBoost only what defines the model (binning, the objective, the fixed-point
grid, the gain and the leaf weight) and grows each tree its own way: recursively, every histogram
summed directly, no encryption, no packing, no histogram subtraction, no messages. SecureBoost is
lossless when its trees equal these exactly (``tests/boost``); these in turn match XGBoost's
``hist`` trees where the bins are the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from vfl.boost.binning import Binning, check_features, fit_binning
from vfl.boost.fixed_point import GradientScale
from vfl.boost.histogram import plain_histogram
from vfl.boost.objectives import Objective, default_base_score
from vfl.boost.params import BoostParams
from vfl.boost.split import best_split, leaf_weight
from vfl.boost.tree import SplitTable, Tree

Floats = npt.NDArray[np.float64]
Structure = tuple[object, ...]
"""A tree as nested tuples: ``("leaf", weight)`` or ``(party, column, bin, missing_left, left,
right)``: what two trees must share to be the same model."""


@dataclass(frozen=True)
class ReferenceSplit:
    """A split of the reference: "bins ``<= bin`` of ``party``'s ``column`` go left"."""

    party: int
    column: int
    bin: int
    missing_left: bool
    threshold: float


@dataclass
class ReferenceNode:
    """A node of a reference tree: a split with two children, or a leaf weight."""

    split: ReferenceSplit | None = None
    children: tuple[ReferenceNode, ReferenceNode] | None = None
    weight: float = 0.0

    def structure(self) -> Structure:
        """This subtree as nested tuples."""
        if self.split is None or self.children is None:
            return ("leaf", self.weight)
        s = self.split
        return (s.party, s.column, s.bin, s.missing_left, *(c.structure() for c in self.children))


@dataclass
class ReferenceModel:
    """Trees grown in the clear, and what predicting with them needs."""

    objective: Objective
    base_margin: float
    binnings: dict[int, Binning]
    trees: list[ReferenceNode] = field(default_factory=list)

    def predict_margins(self, blocks: Mapping[int, npt.NDArray[np.floating]]) -> Floats:
        """Margins of rows given by every party's columns (base margin, then trees in order)."""
        matrices = {p: check_features(b) for p, b in blocks.items()}
        rows = len(next(iter(matrices.values())))
        total = np.full(rows, self.base_margin)
        for tree in self.trees:
            total += _tree_values(tree, matrices, np.arange(rows), np.zeros(rows))
        return total


def fit_reference(
    labels: npt.NDArray[np.floating],
    blocks: Mapping[int, npt.NDArray[np.floating]],
    params: BoostParams,
) -> ReferenceModel:
    """Grow ``params.num_trees`` trees on all parties' columns, parties in id order."""
    objective = Objective(params.objective)
    y = np.asarray(labels, dtype=np.float64)
    objective.check_labels(y)
    matrices = {p: check_features(blocks[p]) for p in sorted(blocks)}
    binnings = {p: fit_binning(m, params.max_bin) for p, m in matrices.items()}
    codes = {p: binnings[p].codes(m) for p, m in matrices.items()}
    base = default_base_score(objective, y) if params.base_score is None else params.base_score
    model = ReferenceModel(objective, objective.base_margin(base), binnings)
    margins = np.full(len(y), model.base_margin)
    for _ in range(params.num_trees):
        g, h = objective.gradients(margins, y)
        scale = GradientScale.for_gradients(g, h)
        g, h = scale.quantize(g), scale.quantize(h)
        grower = _Grower(params, binnings, codes, g, h)
        tree = grower.grow(np.arange(len(y)), 0)
        model.trees.append(tree)
        margins += grower.row_weights
    return model


class _Grower:
    def __init__(
        self,
        params: BoostParams,
        binnings: dict[int, Binning],
        codes: dict[int, npt.NDArray[np.uint16]],
        g: Floats,
        h: Floats,
    ) -> None:
        self.params, self.binnings, self.codes, self.g, self.h = params, binnings, codes, g, h
        self.row_weights = np.zeros(len(g))

    def grow(self, rows: npt.NDArray[np.int64], depth: int) -> ReferenceNode:
        total = (float(self.g[rows].sum()), float(self.h[rows].sum()))
        best = None
        if depth < self.params.max_depth:
            for party, binning in self.binnings.items():
                bins = np.array(binning.num_bins, dtype=np.int64)
                histogram = plain_histogram(self.codes[party], bins, rows, self.g, self.h)
                choice = best_split(histogram, total, self.params)
                if choice and (best is None or choice.loss_change > best[1].loss_change):
                    best = (party, choice)
        if best is None:
            weight = leaf_weight(total[0], total[1], self.params)
            self.row_weights[rows] = weight
            return ReferenceNode(weight=weight)
        party, c = best
        column_codes = self.codes[party][rows, c.column]
        missing = column_codes == self.binnings[party].columns[c.column].num_bins
        left = np.where(missing, c.missing_left, column_codes <= c.bin)
        threshold = self.binnings[party].columns[c.column].threshold(c.bin)
        split = ReferenceSplit(party, c.column, c.bin, c.missing_left, threshold)
        children = (self.grow(rows[left], depth + 1), self.grow(rows[~left], depth + 1))
        return ReferenceNode(split=split, children=children)


def _tree_values(
    node: ReferenceNode,
    matrices: dict[int, Floats],
    rows: npt.NDArray[np.int64],
    out: Floats,
) -> Floats:
    if node.split is None or node.children is None:
        out[rows] = node.weight
        return out
    s = node.split
    values = matrices[s.party][rows, s.column]
    with np.errstate(invalid="ignore"):
        left = np.where(np.isnan(values), s.missing_left, values < s.threshold)
    _tree_values(node.children[0], matrices, rows[left], out)
    return _tree_values(node.children[1], matrices, rows[~left], out)


def secureboost_structure(
    tree: Tree, tables: Mapping[int, SplitTable], index: int = 0
) -> Structure:
    """A SecureBoost tree as nested tuples, its splits read from every owner's table.

    Only a test or an audit with every holder's tables can do this: no holder alone can.
    """
    node = tree.nodes[index]
    if node.is_leaf:
        return ("leaf", node.weight)
    rule = tables[node.owner].rule(node.record)
    return (
        node.owner,
        rule.column,
        rule.bin,
        rule.missing_left,
        secureboost_structure(tree, tables, node.left),
        secureboost_structure(tree, tables, node.right),
    )
