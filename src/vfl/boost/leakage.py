"""What a passive holder can infer about labels from the instance spaces SecureBoost shows it.

Every passive holder receives, for each node the label holder splits, the node's rows (a
``HistogramRequest``), and learns the split of every node its own columns won. Those row sets
follow the labels: a tree's nodes group rows of similar gradients, and in the first tree of a
logistic loss a row's gradient is a function of its label alone. SecureBoost's authors name this
leakage (Cheng et al. 2019, section 6: the first tree's instance spaces; their "reduced-leakage"
variant lets the label holder grow the first tree alone).

``InstanceSpaceSpy`` is an honest-but-curious passive holder: it answers every request exactly as
``PassiveBooster`` does and records the row sets it was sent. ``infer_labels`` is the inference
such a holder can run with a few labels it knows from elsewhere (its own customers' outcomes):
each row's score is the average, over the trees, of the smoothed share of known positives in the
deepest node it was seen in. Nothing here changes the protocol; it measures what it shows.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import numpy.typing as npt

from vfl.boost.messages import HistogramRequest, Reply, Request, SplitReply, SplitRequest
from vfl.boost.passive import PassiveBooster

Floats = npt.NDArray[np.float64]
Rows = npt.NDArray[np.int64]


class InstanceSpaceSpy(PassiveBooster):
    """A passive holder that follows the protocol and keeps every row set it sees, by tree.

    Attributes:
        spaces: ``spaces[tree]``: the row sets of that tree's nodes, shallowest first (the rows
            sent for each node, its siblings' derived by subtraction, and both sides of the
            splits this holder made).
    """

    def __init__(
        self,
        party: int,
        features: npt.NDArray[np.floating],
        *,
        max_bin: int,
        insecure_test_key: bool = False,
    ) -> None:
        super().__init__(party, features, max_bin=max_bin, insecure_test_key=insecure_test_key)
        self.spaces: defaultdict[int, list[Rows]] = defaultdict(list)

    def handle(self, request: Request) -> Reply:
        """Answer as an honest holder, then record what the request or its answer showed."""
        reply = super().handle(request)
        if isinstance(request, HistogramRequest):
            self.spaces[request.tree] += [rows for rows, _ in self._nodes.values()]
        if isinstance(request, SplitRequest) and isinstance(reply, SplitReply):
            for result in reply.results:
                rows = self._nodes[result.node][0]
                self.spaces[request.tree] += [rows[result.left], rows[~result.left]]
        return reply


def deepest_cells(spaces: list[Rows], num_rows: int) -> npt.NDArray[np.int64]:
    """For each row, the index of the last (deepest) row set in ``spaces`` that holds it."""
    cells = np.full(num_rows, -1, dtype=np.int64)
    for index, rows in enumerate(spaces):
        cells[rows] = index
    return cells


def infer_labels(
    spaces: dict[int, list[Rows]],
    num_rows: int,
    known_rows: Rows,
    known_labels: Floats,
    *,
    prior_weight: float = 1.0,
) -> Floats:
    """A score per row: how likely its label is 1, from the instance spaces and a few labels.

    Per tree, the share of positives among the known rows in each row's deepest node, shrunk to
    the known rows' overall share with ``prior_weight`` pseudo-rows; averaged over the trees.
    """
    prior = float(np.mean(known_labels)) if len(known_labels) else 0.5
    scores = np.zeros(num_rows)
    for tree in sorted(spaces):
        cells = deepest_cells(spaces[tree], num_rows)
        size = int(cells.max()) + 2  # index -1 (never seen) shifts to 0
        positives = np.bincount(cells[known_rows] + 1, weights=known_labels, minlength=size)
        counts = np.bincount(cells[known_rows] + 1, minlength=size)
        share = (positives + prior_weight * prior) / (counts + prior_weight)
        scores += share[cells + 1]
    return scores / max(len(spaces), 1)
