"""The label holder: labels, the private key, every tree's shape and leaf weights.

It grows each tree depth by depth (XGBoost's ``depthwise`` policy): it encrypts the tree's
gradients once, then for each depth asks every passive holder for the encrypted histograms of the
open nodes, decrypts them, finds the best split of each node over all holders' columns (its own in
the clear), and has each winning owner split its node. It learns each node's rows (the instance
space), the owner and record number of each split, and no passive threshold (SecureBoost,
Cheng et al. 2019, Algorithms 1 and 2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vfl.boost import fixed_point as fp
from vfl.boost.binning import check_features, fit_binning
from vfl.boost.histogram import plain_histogram
from vfl.boost.link import Link
from vfl.boost.messages import (
    NO_NODE,
    Ack,
    BinLayout,
    Ciphertexts,
    EncryptedGradients,
    HistogramReply,
    HistogramRequest,
    NodeRows,
    PaillierKey,
    SplitOrder,
    SplitReply,
    SplitRequest,
)
from vfl.boost.objectives import Objective, default_base_score
from vfl.boost.paillier import KeyPair
from vfl.boost.params import BoostParams
from vfl.boost.pool import CipherPool
from vfl.boost.predict import margins, route
from vfl.boost.split import Histogram, SplitChoice, best_split, leaf_weight
from vfl.boost.timing import PhaseTimer, TreeReport
from vfl.boost.tree import SplitTable, Tree
from vfl.errors import ProtocolError, WireError

Floats = npt.NDArray[np.float64]
Rows = npt.NDArray[np.int64]


@dataclass
class OpenNode:
    """A node still to be split: its rows and sums, and its sibling (children come in pairs)."""

    node: int
    rows: Rows
    sums: tuple[float, float]
    parent: int = NO_NODE
    sibling: int = NO_NODE


@dataclass(frozen=True)
class Winner:
    """The best split of a node over all holders."""

    party: int
    choice: SplitChoice


class ActiveBooster:
    """The label holder's side of SecureBoost.

    Args:
        party: Its party id.
        labels: ``(N,)`` training labels.
        features: ``(N, F)`` its own training columns (``F`` may be 0).
        params: What to grow.
        keys: Its Paillier key pair.
        workers: Processes for encryption and decryption (``None``: every core).
    """

    def __init__(
        self,
        party: int,
        labels: npt.NDArray[np.floating],
        features: npt.NDArray[np.floating],
        params: BoostParams,
        keys: KeyPair,
        *,
        workers: int | None = None,
    ) -> None:
        self.party, self.params, self.keys = party, params, keys
        self.objective = Objective(params.objective)
        self.labels = np.asarray(labels, dtype=np.float64)
        self.objective.check_labels(self.labels)
        matrix = check_features(features)
        if len(matrix) != len(self.labels):
            raise ProtocolError(f"{len(matrix)} feature rows for {len(self.labels)} labels")
        self.binning = fit_binning(matrix, params.max_bin)
        self.bins = np.array(self.binning.num_bins, dtype=np.int64)
        self.codes = self.binning.codes(matrix)
        base = params.base_score
        self.base_score = default_base_score(self.objective, self.labels) if base is None else base
        self.base_margin = self.objective.base_margin(self.base_score)
        self.margins = np.full(len(self.labels), self.base_margin)
        self.trees: list[Tree] = []
        self.splits = SplitTable()
        self.layouts: dict[int, npt.NDArray[np.int64]] = {}
        self.pool = CipherPool(keys, workers)

    def connect(self, link: Link, parties: Sequence[int]) -> None:
        """Send the public key to every passive holder and learn its histogram layout."""
        if self.party in parties:
            raise ProtocolError(f"party {self.party} is the label holder, not a passive holder")
        replies = link.request({p: PaillierKey(self.keys.public.to_bytes()) for p in parties})
        for party in parties:
            reply = replies.get(party)
            if not isinstance(reply, BinLayout):
                raise ProtocolError(f"party {party} answered the key with {reply!r}")
            self.layouts[party] = np.array(reply.bins, dtype=np.int64).reshape(-1)

    def restore(self, trees: list[Tree], splits: SplitTable, margins: Floats) -> None:
        """Continue from a checkpoint: its trees, own split rules and training margins.

        Raises:
            ProtocolError: if the margins are not one per training row.
        """
        if np.shape(margins) != self.margins.shape:
            raise ProtocolError(
                f"{np.shape(margins)} training margins for {len(self.margins)} training rows"
            )
        self.trees, self.splits = list(trees), splits
        self.margins = np.array(margins, dtype=np.float64)

    def fit(self, link: Link) -> list[TreeReport]:
        """Grow all ``params.num_trees`` trees; the pool's processes stop at the end."""
        try:
            return [self.grow_tree(link) for _ in range(self.params.num_trees)]
        finally:
            self.pool.close()

    def grow_tree(self, link: Link) -> TreeReport:
        """Grow one tree and add it to the model (and its leaf weights to the margins)."""
        index, timer = len(self.trees), PhaseTimer()
        with timer.phase("gradients"):
            g, h = self.objective.gradients(self.margins, self.labels)
            scale = fp.GradientScale.for_gradients(g, h)
            g_int, h_int = scale.to_integers(g), scale.to_integers(h)
            g, h = scale.to_floats(g_int), scale.to_floats(h_int)
        self._send_gradients(link, index, fp.pack_pairs(g_int, h_int), timer)
        tree = Tree()
        frontier = [OpenNode(0, np.arange(len(self.labels)), (float(g.sum()), float(h.sum())))]
        report = TreeReport(index)
        for _ in range(self.params.max_depth):
            if not frontier:
                break
            frontier = self._grow_depth(link, index, tree, frontier, (g, h, scale), timer, report)
        for open_node in frontier:
            self._make_leaf(tree, open_node)
        self.trees.append(tree)
        report.seconds = dict(timer.seconds)
        report.leaves = sum(node.is_leaf for node in tree.nodes)
        return report

    def _send_gradients(self, link: Link, tree: int, packed: list[int], timer: PhaseTimer) -> None:
        with timer.phase("encrypt"):
            ciphertexts = self.pool.encrypt(packed)
            key = self.keys.public
            values = Ciphertexts(key.ciphertext_size, key.encode(ciphertexts))
        with timer.phase("histogram"):
            message = EncryptedGradients(tree, fp.SLOT_BITS, values)
            replies = link.request(dict.fromkeys(self.layouts, message))
        for party, reply in replies.items():
            if not isinstance(reply, Ack) or reply.tree != tree:
                raise ProtocolError(
                    f"party {party} answered tree {tree}'s gradients with {reply!r}"
                )

    def _grow_depth(
        self,
        link: Link,
        index: int,
        tree: Tree,
        frontier: list[OpenNode],
        grads: tuple[Floats, Floats, fp.GradientScale],
        timer: PhaseTimer,
        report: TreeReport,
    ) -> list[OpenNode]:
        g, h, scale = grads
        with timer.phase("histogram"):
            request = HistogramRequest(index, _node_requests(frontier))
            replies = link.request(dict.fromkeys(self.layouts, request))
        with timer.phase("decrypt"):
            remote = self._decrypt(replies, frontier, scale, h, report)
        with timer.phase("split_find"):
            winners = {n.node: self._best(n, remote, g, h) for n in frontier}
        with timer.phase("split_apply"):
            masks = self._apply_splits(link, index, frontier, winners)
        next_frontier: list[OpenNode] = []
        for open_node in frontier:
            if open_node.node not in masks:
                self._make_leaf(tree, open_node)
                continue
            winner = winners[open_node.node]
            assert winner is not None
            record, mask = masks[open_node.node]
            left, right = tree.split(open_node.node, winner.party, record)
            children = self._children(open_node, (left, right), mask, winner, g, h)
            if tree.nodes[left].depth < self.params.max_depth:
                next_frontier += children
            else:
                for child in children:
                    self._make_leaf(tree, child)
        return next_frontier

    def _decrypt(
        self,
        replies: Mapping[int, object],
        frontier: list[OpenNode],
        scale: fp.GradientScale,
        h: Floats,
        report: TreeReport,
    ) -> dict[tuple[int, int], Histogram]:
        """Every passive histogram of every open node, decrypted and unpacked."""
        key, slots = self.keys.public, fp.slots_per_plaintext(self.keys.public.bits)
        wanted = [n.node for n in frontier]
        batches: list[tuple[int, int, list[int]]] = []
        for party, reply in replies.items():
            if not isinstance(reply, HistogramReply):
                raise ProtocolError(f"party {party} answered a histogram request with {reply!r}")
            got = {hist.node: hist for hist in reply.histograms}
            if sorted(got) != sorted(wanted):
                raise ProtocolError(
                    f"party {party} sent histograms of nodes {sorted(got)}, not of {sorted(wanted)}"
                )
            count = -(-int(self.layouts[party].sum()) // slots)
            for node in wanted:
                values = got[node].values
                if values.width != key.ciphertext_size:
                    raise ProtocolError(
                        f"party {party}'s histogram of node {node} has {values.width}-byte"
                        f" ciphertexts; this {key.bits}-bit key's are {key.ciphertext_size} bytes"
                    )
                try:
                    batches.append((party, node, key.decode(values.data, count=count)))
                except WireError as error:
                    raise WireError(f"party {party}'s histogram of node {node}: {error}") from None
        plain = self.pool.decrypt([c for _, _, cs in batches for c in cs])
        report.ciphertexts_up += len(plain)
        totals = {n.node: int(scale.to_integers(h[n.rows]).sum()) for n in frontier}
        histograms: dict[tuple[int, int], Histogram] = {}
        start = 0
        for party, node, ciphertexts in batches:
            plaintexts = plain[start : start + len(ciphertexts)]
            start += len(ciphertexts)
            histograms[party, node] = self._unpack(party, node, plaintexts, scale, totals[node])
        return histograms

    def _unpack(
        self, party: int, node: int, plaintexts: list[int], scale: fp.GradientScale, h_total: int
    ) -> Histogram:
        bins = self.layouts[party]
        size, slots, n = (
            int(bins.sum()),
            fp.slots_per_plaintext(self.keys.public.bits),
            self.keys.public.n,
        )
        sums: list[int] = []
        try:
            for i, value in enumerate(plaintexts):
                count = min(slots, size - i * slots)
                sums += fp.split_slots(fp.signed(value, n), count)
        except ProtocolError:
            raise ProtocolError(_FOREIGN.format(party=party, node=node)) from None
        pairs = np.array([fp.unpack_pair(s) for s in sums], dtype=np.int64).reshape(-1, 2)
        _check_hessians(party, node, bins, pairs[:, 1], h_total)
        return Histogram(bins, scale.to_floats(pairs[:, 0]), scale.to_floats(pairs[:, 1]))

    def _best(
        self, open_node: OpenNode, remote: dict[tuple[int, int], Histogram], g: Floats, h: Floats
    ) -> Winner | None:
        """The best split over every holder's columns, holders in party order."""
        best: Winner | None = None
        for party in sorted([self.party, *self.layouts]):
            if party == self.party:
                histogram = plain_histogram(self.codes, self.bins, open_node.rows, g, h)
            else:
                histogram = remote[party, open_node.node]
            choice = best_split(histogram, open_node.sums, self.params)
            if choice is not None and (
                best is None or choice.loss_change > best.choice.loss_change
            ):
                best = Winner(party, choice)
        return best

    def _apply_splits(
        self,
        link: Link,
        index: int,
        frontier: list[OpenNode],
        winners: dict[int, Winner | None],
    ) -> dict[int, tuple[int, npt.NDArray[np.bool_]]]:
        """Each owner splits the nodes its columns won: ``{node: (record, left mask)}``."""
        masks: dict[int, tuple[int, npt.NDArray[np.bool_]]] = {}
        orders: dict[int, list[SplitOrder]] = {}
        rows = {n.node: n.rows for n in frontier}
        for node, winner in winners.items():
            if winner is None:
                continue
            c = winner.choice
            if winner.party == self.party:
                record = self.splits.add(self.binning, c.column, c.bin, c.missing_left)
                codes = self.codes[rows[node], c.column]
                missing = codes == self.bins[c.column]
                masks[node] = (record, np.where(missing, c.missing_left, codes <= c.bin))
            else:
                orders.setdefault(winner.party, []).append(
                    SplitOrder(node, c.column, c.bin, c.missing_left)
                )
        requests = {p: SplitRequest(index, tuple(o)) for p, o in orders.items()}
        for party, reply in (link.request(requests) if requests else {}).items():
            masks.update(_check_split_reply(party, reply, requests[party], rows))
        return masks

    def _children(
        self,
        parent: OpenNode,
        ids: tuple[int, int],
        mask: npt.NDArray[np.bool_],
        winner: Winner,
        g: Floats,
        h: Floats,
    ) -> list[OpenNode]:
        left_rows, right_rows = parent.rows[mask], parent.rows[~mask]
        left_sums = (float(g[left_rows].sum()), float(h[left_rows].sum()))
        if left_sums != winner.choice.left:
            raise ProtocolError(
                f"party {winner.party}'s split of node {parent.node} sends rows left whose"
                f" gradient sums {left_sums} differ from its histogram's {winner.choice.left}"
            )
        right_sums = (parent.sums[0] - left_sums[0], parent.sums[1] - left_sums[1])
        left = OpenNode(ids[0], left_rows, left_sums, parent.node, ids[1])
        right = OpenNode(ids[1], right_rows, right_sums, parent.node, ids[0])
        return [left, right]

    def predict_margins(self, link: Link, table: str, own_features: Floats) -> Floats:
        """Margins of the rows the holders keep as ``table`` (its own columns given here)."""
        matrix = check_features(own_features, width=len(self.bins))
        positions = route(self.trees, self.party, self.splits, matrix, link, table)
        return margins(self.trees, positions, self.base_margin)

    def predict(self, link: Link, table: str, own_features: Floats) -> Floats:
        """Predictions (probabilities for ``binary:logistic``) of the rows of ``table``."""
        return self.objective.output(self.predict_margins(link, table, own_features))

    def _make_leaf(self, tree: Tree, open_node: OpenNode) -> None:
        weight = leaf_weight(open_node.sums[0], open_node.sums[1], self.params)
        tree.nodes[open_node.node].weight = weight
        self.margins[open_node.rows] += weight


_FOREIGN = (
    "party {party}'s histogram of node {node} does not decrypt to valid sums (more slots than"
    " packed, or hessian sums that decrease or exceed the node's): ciphertexts under another"
    " public key than this run's, or corrupted"
)


def _node_requests(frontier: list[OpenNode]) -> tuple[NodeRows, ...]:
    """Every open node's rows, except that of two siblings only the smaller is summed."""
    specs: list[NodeRows] = []
    done: set[int] = set()
    by_id = {n.node: n for n in frontier}
    for open_node in frontier:
        if open_node.node in done:
            continue
        sibling = by_id.get(open_node.sibling)
        if sibling is None:
            specs.append(NodeRows(open_node.node, open_node.rows))
            done.add(open_node.node)
            continue
        small, large = sorted((open_node, sibling), key=lambda n: (len(n.rows), n.node))
        specs.append(NodeRows(small.node, small.rows, small.parent, large.node))
        done.update((small.node, large.node))
    return tuple(specs)


def _check_hessians(
    party: int, node: int, bins: npt.NDArray[np.int64], hessians: npt.NDArray[np.int64], total: int
) -> None:
    """Cumulative hessian sums never decrease within a column and never exceed the node's."""
    within = np.ones(max(len(hessians) - 1, 0), dtype=bool)
    within[(np.cumsum(bins) - 1)[:-1]] = False  # from a column's last bin to the next's first
    if (np.diff(hessians)[within] < 0).any() or (hessians < 0).any() or (hessians > total).any():
        raise ProtocolError(_FOREIGN.format(party=party, node=node))


def _check_split_reply(
    party: int,
    reply: object,
    request: SplitRequest,
    rows: dict[int, Rows],
) -> dict[int, tuple[int, npt.NDArray[np.bool_]]]:
    if not isinstance(reply, SplitReply) or len(reply.results) != len(request.orders):
        raise ProtocolError(
            f"party {party} answered {len(request.orders)} split orders with {reply!r}"
        )
    masks = {}
    for order, result in zip(request.orders, reply.results, strict=True):
        mask = np.asarray(result.left)
        if (
            result.node != order.node
            or mask.dtype != np.bool_
            or mask.shape != rows[order.node].shape
        ):
            raise ProtocolError(
                f"party {party}'s split of node {order.node} does not give one boolean per row"
            )
        masks[order.node] = (result.record, mask)
    return masks
