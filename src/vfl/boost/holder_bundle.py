"""A SecureBoost model saved by holder: each keeps only its own knowledge, as JSON (no pickle).

- The **label holder**'s bundle: every tree's shape (owner and record number of each split), the
  leaf weights, the base margin, the objective, its own split rules, the parties and classes.
- A **holder**'s bundle: its own split rules (column, threshold, where a missing value goes) by
  record number, its number of columns, and whatever the caller adds (a deployed party: the
  encoding of its raw columns).

Both carry the run's ``fingerprint``, so that holders of different runs are not mixed. The file is
``FOLDER/secureboost.json``; it is written to a temporary name and renamed, and a folder that
already holds a bundle is kept as a copy first. Loading checks every field and names the first
that is wrong (a corrupt bundle is one clear line). JSON keeps Python floats exactly (``repr``),
so a loaded model predicts bit for bit what the trained one did.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from vfl.boost.active import ActiveBooster
from vfl.boost.link import Link, local_link
from vfl.boost.messages import Reply, Request, RouteReply, RouteRequest
from vfl.boost.params import OBJECTIVES
from vfl.boost.passive import PassiveBooster
from vfl.boost.predict import margins, route
from vfl.boost.tree import LEAF, Node, SplitRule, SplitTable, Tree
from vfl.errors import DataError, ProtocolError
from vfl.results.files import keep_copy

FILE = "secureboost.json"
FORMAT = "vfl-secureboost-holder"
VERSION = 1
LABEL_HOLDER = "label_holder"
HOLDER = "holder"
PREDICT_TABLE = "predict"


@dataclass
class HolderBundle:
    """One holder's part of a SecureBoost model.

    Attributes:
        role: ``label_holder`` or ``holder``.
        party: Its party id.
        fingerprint: The run's fingerprint.
        columns: How many columns of its own the splits refer to.
        splits: Its own split rules, by record number.
        trees: The label holder's trees (empty for a holder).
        base_margin: The label holder's margin before any tree.
        objective: The label holder's objective.
        parties: The label holder's view of the other holders, ascending.
        classes: The label holder's class names (binary tasks), else empty.
        extra: Anything else the caller saved (a deployed party's ``preprocessing``).
    """

    role: str
    party: int
    fingerprint: str
    columns: int
    splits: SplitTable
    trees: list[Tree] = field(default_factory=list)
    base_margin: float = 0.0
    objective: str = ""
    parties: tuple[int, ...] = ()
    classes: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def save(self, folder: Path) -> Path:
        """Write ``folder/secureboost.json`` (an existing one is kept as a copy first)."""
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / FILE
        if target.exists():
            keep_copy(target, "replaced by a new SecureBoost bundle")
        temporary = target.with_name(target.name + ".tmp")
        temporary.write_text(json.dumps(self._as_dict(), indent=1) + "\n")
        temporary.replace(target)
        return target

    def predict_margins(
        self, link: Link, table: str, own_features: npt.NDArray[np.floating]
    ) -> npt.NDArray[np.float64]:
        """The label holder's margins of the rows the other holders keep as ``table``."""
        features = np.asarray(own_features, dtype=np.float64)
        if features.ndim != 2 or features.shape[1] != self.columns:
            raise DataError(
                f"the label holder's rows have shape {features.shape}; its model splits on"
                f" {self.columns} columns of its own"
            )
        positions = route(self.trees, self.party, self.splits, features, link, table)
        return margins(self.trees, positions, self.base_margin)

    def _as_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "role": self.role,
            "party": self.party,
            "fingerprint": self.fingerprint,
            "columns": self.columns,
            "splits": [[r.column, r.bin, r.threshold, r.missing_left] for r in self.splits.rules],
            "trees": [
                [[n.depth, n.owner, n.record, n.left, n.right, n.weight] for n in tree.nodes]
                for tree in self.trees
            ],
            "base_margin": self.base_margin,
            "objective": self.objective,
            "parties": list(self.parties),
            "classes": list(self.classes),
            "extra": self.extra,
        }


def load_bundle(folder: Path, *, role: str) -> HolderBundle:
    """The bundle in ``folder``, which must be of ``role``.

    Raises:
        DataError: naming the file and the first field that is missing or wrong.
    """
    path = Path(folder) / FILE
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise DataError(f"{path} does not exist: no SecureBoost bundle in {folder}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(f"{path} is not a readable SecureBoost bundle: {error}") from None
    reader = _Reader(path, raw)
    if reader.get("format", str) != FORMAT or reader.get("version", int) != VERSION:
        raise DataError(f"{path} is not a {FORMAT} bundle of version {VERSION}")
    found = reader.get("role", str)
    if found != role:
        raise DataError(f"{path} is a {found!r} bundle; this needs the {role!r} one")
    columns = reader.get("columns", int)
    bundle = HolderBundle(
        role=found,
        party=reader.get("party", int),
        fingerprint=reader.get("fingerprint", str),
        columns=columns,
        splits=SplitTable(
            [_rule(reader, i, r, columns) for i, r in enumerate(reader.items("splits"))]
        ),
        base_margin=reader.get("base_margin", float),
        objective=reader.get("objective", str),
        parties=tuple(reader.get_ints("parties")),
        classes=tuple(str(c) for c in reader.items("classes")),
        extra=reader.get("extra", dict),
    )
    bundle.trees = [_tree(reader, t, nodes) for t, nodes in enumerate(reader.items("trees"))]
    if role == LABEL_HOLDER:
        if bundle.objective not in OBJECTIVES:
            raise DataError(
                f"{path}: objective {bundle.objective!r} is not one of {list(OBJECTIVES)}"
            )
        _check_owners(path, bundle)
    return bundle


class _Reader:
    def __init__(self, path: Path, raw: Any) -> None:
        if not isinstance(raw, dict):
            raise DataError(f"{path} is not a SecureBoost bundle (not a JSON object)")
        self.path, self.raw = path, raw

    def get(self, key: str, kind: type) -> Any:
        value = self.raw.get(key)
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise DataError(f"{self.path}: field {key!r} must be {kind.__name__}, got {value!r}")
        return value

    def items(self, key: str) -> list[Any]:
        value: list[Any] = self.get(key, list)
        return value

    def get_ints(self, key: str) -> list[int]:
        values = self.items(key)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise DataError(f"{self.path}: field {key!r} must be a list of integers")
        return values

    def bad(self, what: str) -> DataError:
        return DataError(f"{self.path}: {what}")


def _rule(reader: _Reader, index: int, raw: Any, columns: int) -> SplitRule:
    if (
        not isinstance(raw, list)
        or len(raw) != 4
        or not isinstance(raw[0], int)
        or not 0 <= raw[0] < columns
        or not isinstance(raw[1], int)
        or not isinstance(raw[2], int | float)
        or math.isnan(raw[2])
        or not isinstance(raw[3], bool)
    ):
        raise reader.bad(
            f"split record {index} must be [column in 0..{columns - 1}, bin, threshold,"
            f" missing_left], got {raw!r}"
        )
    return SplitRule(raw[0], raw[1], float(raw[2]), raw[3])


def _tree(reader: _Reader, index: int, raw: Any) -> Tree:
    if not isinstance(raw, list) or not raw:
        raise reader.bad(f"tree {index} must be a non-empty list of nodes")
    nodes = []
    for position, entry in enumerate(raw):
        if (
            not isinstance(entry, list)
            or len(entry) != 6
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in entry[:5])
            or not isinstance(entry[5], int | float)
            or not math.isfinite(entry[5])
        ):
            raise reader.bad(
                f"tree {index} node {position} must be [depth, owner, record, left, right,"
                f" weight], got {entry!r}"
            )
        depth, owner, record, left, right, weight = entry
        inner = owner != LEAF
        if inner and not (position < left < len(raw) and position < right < len(raw)):
            raise reader.bad(f"tree {index} node {position} has children outside the tree")
        nodes.append(Node(depth, owner, record, left, right, float(weight)))
    return Tree(nodes)


def _check_owners(path: Path, bundle: HolderBundle) -> None:
    known = {bundle.party, *bundle.parties}
    for t, tree in enumerate(bundle.trees):
        for position, node in enumerate(tree.nodes):
            if not node.is_leaf and node.owner not in known:
                raise DataError(
                    f"{path}: tree {t} node {position} is split by party {node.owner}, which is"
                    f" not one of the model's holders {sorted(known)}"
                )


class RuleHolder:
    """A holder that answers prediction lookups from its bundle's split rules.

    Args:
        bundle: The holder's bundle.
    """

    def __init__(self, bundle: HolderBundle) -> None:
        self.party = bundle.party
        self.splits = bundle.splits
        self.columns = bundle.columns
        self._tables: dict[str, npt.NDArray[np.float64]] = {}

    def attach(self, name: str, features: npt.NDArray[np.floating]) -> None:
        """Hold ``features`` (this holder's columns of rows to predict) as table ``name``."""
        matrix = np.asarray(features, dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[1] != self.columns:
            raise DataError(
                f"party {self.party}'s rows have shape {matrix.shape}; its model splits on"
                f" {self.columns} columns"
            )
        self._tables[name] = matrix

    def request_limit(self) -> int:
        """The most bytes a lookup request can take (bounds requests in pieces)."""
        rows = max((len(t) for t in self._tables.values()), default=0)
        return 2**20 + (8 * rows + 16) * max(len(self.splits.rules), 1)

    def handle(self, request: Request) -> Reply:
        """Answer a ``RouteRequest`` (the only request a trained model's holder answers)."""
        if not isinstance(request, RouteRequest):
            raise ProtocolError(
                f"party {self.party} predicts with its bundle; it cannot answer a"
                f" {type(request).__name__}"
            )
        if request.table not in self._tables:
            raise ProtocolError(f"party {self.party} holds no table {request.table!r}")
        table = self._tables[request.table]
        masks = []
        for query in request.queries:
            rows = np.asarray(query.rows)
            if rows.dtype != np.int64 or (
                len(rows) and (rows.min() < 0 or rows.max() >= len(table))
            ):
                raise ProtocolError(f"record {query.record}: rows outside [0, {len(table)})")
            masks.append(self.splits.goes_left(query.record, table[rows]))
        return RouteReply(tuple(masks))


def check_same_model(label_holder: HolderBundle, holders: Sequence[HolderBundle]) -> None:
    """Every holder's bundle comes from the label holder's run.

    Raises:
        DataError: naming the first holder of another run.
    """
    for holder in holders:
        if holder.fingerprint != label_holder.fingerprint:
            raise DataError(
                f"party {holder.party}'s SecureBoost bundle comes from another run than the"
                " label holder's"
            )


def label_holder_bundle(
    active: ActiveBooster,
    parties: Sequence[int],
    *,
    fingerprint: str,
    classes: Sequence[str] = (),
) -> HolderBundle:
    """The label holder's bundle of a trained ``active``."""
    return HolderBundle(
        role=LABEL_HOLDER,
        party=active.party,
        fingerprint=fingerprint,
        columns=len(active.bins),
        splits=active.splits,
        trees=list(active.trees),
        base_margin=float(active.base_margin),
        objective=active.objective.name,
        parties=tuple(sorted(parties)),
        classes=tuple(classes),
    )


def holder_bundle(
    holder: PassiveBooster, *, fingerprint: str, extra: dict[str, Any] | None = None
) -> HolderBundle:
    """A passive holder's bundle: its own split rules only."""
    return HolderBundle(
        role=HOLDER,
        party=holder.party,
        fingerprint=fingerprint,
        columns=len(holder.bins),
        splits=holder.splits,
        extra=dict(extra or {}),
    )


def predict_from_bundles(
    label_holder: HolderBundle,
    holders: Mapping[int, tuple[HolderBundle, npt.NDArray[np.floating]]],
    own_features: npt.NDArray[np.floating],
) -> npt.NDArray[np.float64]:
    """Margins of new rows from every holder's bundle, all in this process.

    Args:
        label_holder: The label holder's bundle.
        holders: Each other holder's bundle and its columns of the rows, by party.
        own_features: The label holder's columns of the rows.

    Raises:
        DataError: if a holder is missing or its bundle comes from another run.
    """
    check_same_model(label_holder, [bundle for bundle, _ in holders.values()])
    if sorted(holders) != sorted(label_holder.parties):
        raise DataError(
            f"the model's holders are parties {list(label_holder.parties)}; bundles and rows"
            f" were given for {sorted(holders)}"
        )
    answering = {}
    for party, (bundle, features) in holders.items():
        answering[party] = RuleHolder(bundle)
        answering[party].attach(PREDICT_TABLE, features)
    return label_holder.predict_margins(local_link(answering), PREDICT_TABLE, own_features)
