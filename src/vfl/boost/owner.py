"""A holder's side at prediction only: its split rules and the rows it is asked to route.

After training, a holder needs nothing of the protocol but its own split table (from its
bundle) and its columns of the rows to score; ``SplitOwner`` answers the label holder's
``RouteRequest`` with them, as ``PassiveBooster`` does during training, through
``passive_endpoint`` over any vfl transport.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from vfl.boost.binning import check_features
from vfl.boost.messages import Reply, Request, RouteReply, RouteRequest
from vfl.boost.tree import SplitTable
from vfl.errors import ProtocolError


class SplitOwner:
    """A holder's split rules, answering route requests for the tables it holds.

    Args:
        party: Its party id.
        splits: Its split rules, by record number.
        width: Its number of columns.
    """

    def __init__(self, party: int, splits: SplitTable, width: int) -> None:
        self.party, self.splits, self.width = party, splits, width
        self._tables: dict[str, npt.NDArray[np.float64]] = {}

    def attach(self, name: str, features: npt.NDArray[np.floating]) -> None:
        """Hold ``features`` (its columns of the rows to score) as table ``name``."""
        self._tables[name] = check_features(features, width=self.width)

    def request_limit(self) -> int:
        """The most bytes a route request to it can take (bounds a request in pieces).

        At most one row position per record and row of its largest table, and 1 MiB for the
        fixed fields.
        """
        rows = max((len(table) for table in self._tables.values()), default=0)
        return 2**20 + (8 * rows + 16) * max(len(self.splits.rules), 1)

    def handle(self, request: Request) -> Reply:
        """Answer a ``RouteRequest``: which of the queried rows go left at each record."""
        if not isinstance(request, RouteRequest):
            raise ProtocolError(
                f"party {self.party} only routes rows after training; got a"
                f" {type(request).__name__}"
            )
        table = self._tables.get(request.table)
        if table is None:
            raise ProtocolError(f"party {self.party} holds no table {request.table!r}")
        masks = []
        for query in request.queries:
            rows = np.asarray(query.rows)
            if rows.ndim != 1 or rows.dtype != np.int64 or not _within(rows, len(table)):
                raise ProtocolError(
                    f"record {query.record}: rows must be ascending positions in [0, {len(table)})"
                )
            masks.append(self.splits.goes_left(query.record, table[rows]))
        return RouteReply(tuple(masks))


def _within(rows: npt.NDArray[np.int64], limit: int) -> bool:
    return not len(rows) or bool(rows[0] >= 0 and rows[-1] < limit and (np.diff(rows) > 0).all())
