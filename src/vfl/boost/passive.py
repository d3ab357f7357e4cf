"""A passive holder: its own columns and split rules, gradients it can add but never read.

It answers the label holder's requests (``messages``) and keeps, per SecureBoost, only what its
role may know: its columns and their cut points, the thresholds of the splits its columns won, the
encrypted gradients of the current tree, and the row sets of the nodes it was asked about.
"""

from __future__ import annotations

import time
from collections import defaultdict

import gmpy2
import numpy as np
import numpy.typing as npt

from vfl.boost import encrypted_histogram as eh
from vfl.boost.binning import check_features, fit_binning
from vfl.boost.fixed_point import SLOT_BITS, slots_per_plaintext
from vfl.boost.messages import (
    NO_NODE,
    Ack,
    BinLayout,
    Ciphertexts,
    EncryptedGradients,
    HistogramReply,
    HistogramRequest,
    NodeHistogram,
    NodeRows,
    PaillierKey,
    Reply,
    Request,
    RouteReply,
    RouteRequest,
    SplitReply,
    SplitRequest,
    SplitResult,
)
from vfl.boost.paillier import PublicKey
from vfl.boost.tree import SplitTable
from vfl.errors import ProtocolError, WireError

TRAIN = "train"
"""The name of the table a holder trains on (prediction tables get their own names)."""


class PassiveBooster:
    """A holder of feature columns without labels.

    Args:
        party: This holder's party id.
        features: ``(N, F)`` training columns, rows aligned with the label holder's; NaN marks a
            missing value.
        max_bin: Most bins per column.
        insecure_test_key: Accept a Paillier modulus shorter than 2048 bits (tests only).
    """

    def __init__(
        self,
        party: int,
        features: npt.NDArray[np.floating],
        *,
        max_bin: int,
        insecure_test_key: bool = False,
    ) -> None:
        self.party = party
        matrix = check_features(features)
        self.binning = fit_binning(matrix, max_bin)
        self.bins = self.binning.num_bins
        self.splits = SplitTable()
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self._codes = self.binning.codes(matrix)
        self._tables = {TRAIN: matrix}
        self._insecure = insecure_test_key
        self._key: PublicKey | None = None
        self._slots = 0
        self._tree = -1
        self._gradients: list[gmpy2.mpz] = []
        self._nodes: dict[int, tuple[npt.NDArray[np.int64], eh.BinSums]] = {}

    @property
    def num_rows(self) -> int:
        """Training rows."""
        return len(self._codes)

    def request_limit(self) -> int:
        """The most bytes a request to this holder can legitimately take (bounds pieces).

        The largest requests are a tree's gradients (one ciphertext per training row) and a
        prediction depth's lookups (at most one row position per record and row of a table);
        1 MiB more covers every request's fixed fields.
        """
        width = self._key.ciphertext_size if self._key is not None else 0
        rows = max(len(table) for table in self._tables.values())
        records = max(len(self.splits.rules), 1)
        return 2**20 + max(self.num_rows * width, (8 * rows + 16) * records)

    def restore(self, splits: SplitTable, trees_done: int) -> None:
        """Continue from a checkpoint: its split rules after ``trees_done`` trees."""
        self.splits, self._tree, self._nodes = splits, trees_done - 1, {}

    @property
    def trees_done(self) -> int:
        """Trees whose gradients this holder has been sent."""
        return self._tree + 1

    def attach(self, name: str, features: npt.NDArray[np.floating]) -> None:
        """Hold ``features`` (this holder's columns of other rows) as table ``name``."""
        self._tables[name] = check_features(features, width=len(self.bins))

    def handle(self, request: Request) -> Reply:
        """Answer one request from the label holder."""
        if isinstance(request, PaillierKey):
            return self._take_key(request)
        if isinstance(request, EncryptedGradients):
            return self._take_gradients(request)
        if isinstance(request, HistogramRequest):
            return self._histograms(request)
        if isinstance(request, SplitRequest):
            return self._split(request)
        if isinstance(request, RouteRequest):
            return self._route(request)
        raise ProtocolError(f"party {self.party} got an unexpected {type(request).__name__}")

    def _take_key(self, request: PaillierKey) -> BinLayout:
        self._key = PublicKey.from_bytes(request.modulus, insecure_test_key=self._insecure)
        self._slots = slots_per_plaintext(self._key.bits)
        return BinLayout(self.bins)

    def _take_gradients(self, request: EncryptedGradients) -> Ack:
        key = self._require_key()
        if request.tree != self._tree + 1:
            raise ProtocolError(
                f"party {self.party} expected the gradients of tree {self._tree + 1}, got tree"
                f" {request.tree}"
            )
        if request.slot_bits != SLOT_BITS:
            raise ProtocolError(f"slot_bits must be {SLOT_BITS}, got {request.slot_bits}")
        if request.values.width != key.ciphertext_size:
            raise WireError(
                f"the gradients are {request.values.width}-byte ciphertexts; the announced"
                f" {key.bits}-bit key's are {key.ciphertext_size} bytes (another key size?)"
            )
        started = time.perf_counter()
        self._gradients = key.decode(request.values.data, count=self.num_rows)
        self._tree, self._nodes = request.tree, {}
        self.seconds["check_gradients"] += time.perf_counter() - started
        return Ack(request.tree)

    def _histograms(self, request: HistogramRequest) -> HistogramReply:
        key = self._require_tree(request.tree)
        n_square = gmpy2.mpz(key.n_square)
        started = time.perf_counter()
        level: dict[int, tuple[npt.NDArray[np.int64], eh.BinSums]] = {}
        for spec in request.nodes:
            rows = self._check_rows(spec.rows, self.num_rows, f"node {spec.node}")
            sums = eh.encrypted_bin_sums(self._codes, self.bins, rows, self._gradients, n_square)
            level[spec.node] = (rows, sums)
            if spec.sibling != NO_NODE:
                level[spec.sibling] = self._sibling(spec, rows, sums, n_square)
        self.seconds["histogram"] += time.perf_counter() - started
        started = time.perf_counter()
        histograms = tuple(
            NodeHistogram(node, self._pack(sums, n_square)) for node, (_, sums) in level.items()
        )
        self.seconds["pack"] += time.perf_counter() - started
        self._nodes = level
        return HistogramReply(request.tree, histograms)

    def _sibling(
        self,
        spec: NodeRows,
        rows: npt.NDArray[np.int64],
        sums: eh.BinSums,
        n_square: gmpy2.mpz,
    ) -> tuple[npt.NDArray[np.int64], eh.BinSums]:
        if spec.parent not in self._nodes:
            raise ProtocolError(
                f"node {spec.node}'s parent {spec.parent} was not in the last histogram request"
            )
        parent_rows, parent_sums = self._nodes[spec.parent]
        if not np.isin(rows, parent_rows, assume_unique=True).all():
            raise ProtocolError(f"node {spec.node} has rows outside its parent {spec.parent}")
        sibling_rows = np.setdiff1d(parent_rows, rows, assume_unique=True)
        return sibling_rows, eh.subtract(parent_sums, sums, n_square)

    def _pack(self, sums: eh.BinSums, n_square: gmpy2.mpz) -> Ciphertexts:
        key = self._require_key()
        flat = eh.cumulative(sums, self.bins, n_square)
        packed = eh.pack(flat, self._slots, key)
        return Ciphertexts(key.ciphertext_size, key.encode(packed))

    def _split(self, request: SplitRequest) -> SplitReply:
        self._require_tree(request.tree)
        results = []
        for order in request.orders:
            if order.node not in self._nodes:
                raise ProtocolError(f"split of node {order.node}, which was not asked about")
            if not 0 <= order.column < len(self.bins):
                raise ProtocolError(
                    f"split on column {order.column}; party {self.party} has columns"
                    f" 0..{len(self.bins) - 1}"
                )
            if not 0 <= order.bin < self.bins[order.column] - 1:
                raise ProtocolError(
                    f"split after bin {order.bin} of column {order.column}, which splits after"
                    f" bins 0..{self.bins[order.column] - 2}"
                )
            rows = self._nodes[order.node][0]
            record = self.splits.add(self.binning, order.column, order.bin, order.missing_left)
            codes = self._codes[rows, order.column]
            missing = codes == self.bins[order.column]
            left = np.where(missing, order.missing_left, codes <= order.bin)
            results.append(SplitResult(order.node, record, left))
        return SplitReply(request.tree, tuple(results))

    def _route(self, request: RouteRequest) -> RouteReply:
        if request.table not in self._tables:
            raise ProtocolError(
                f"party {self.party} holds no table {request.table!r}; it holds"
                f" {', '.join(sorted(self._tables))}"
            )
        table = self._tables[request.table]
        masks = []
        for query in request.queries:
            rows = self._check_rows(query.rows, len(table), f"record {query.record}")
            masks.append(self.splits.goes_left(query.record, table[rows]))
        return RouteReply(tuple(masks))

    def _require_key(self) -> PublicKey:
        if self._key is None:
            raise ProtocolError(f"party {self.party} has no Paillier key yet")
        return self._key

    def _require_tree(self, tree: int) -> PublicKey:
        key = self._require_key()
        if tree != self._tree:
            raise ProtocolError(
                f"party {self.party} holds the gradients of tree {self._tree}, not of tree {tree}"
            )
        return key

    def _check_rows(
        self, rows: npt.NDArray[np.int64], limit: int, what: str
    ) -> npt.NDArray[np.int64]:
        array = np.asarray(rows)
        if array.ndim != 1 or array.dtype != np.int64:
            raise ProtocolError(f"{what}: rows must be a 1-D int64 array, got {array.dtype}")
        if len(array) and (array[0] < 0 or array[-1] >= limit or (np.diff(array) <= 0).any()):
            raise ProtocolError(f"{what}: rows must be ascending positions in [0, {limit})")
        return array
