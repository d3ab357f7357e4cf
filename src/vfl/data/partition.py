"""Vertical partitioning: which features each party holds.

Images are split by region (left/right halves, quadrants, vertical strips, or any grid of rows
and columns, such as top/bottom halves); tables by
column: explicit groups of names, contiguous blocks, or a seeded random split. Tables are split by
*original* column, so a one-hot encoded categorical always stays with one party.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from vfl.data.dataset import Dataset
from vfl.errors import ConfigError, DataError


@dataclass(frozen=True)
class PartyView:
    """The features one party holds.

    Attributes:
        party: Party id, 1..M.
        columns: For tables: encoded column indices, ascending.
        column_names: For tables: the encoded names of those columns.
        region: For images: ``(row_start, row_stop, col_start, col_stop)`` in pixels.
    """

    party: int
    columns: tuple[int, ...] = ()
    column_names: tuple[str, ...] = ()
    region: tuple[int, int, int, int] = (0, 0, 0, 0)

    def select(self, features: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """This party's block of a feature matrix (a contiguous copy)."""
        if features.ndim == 4:
            r0, r1, c0, c1 = self.region
            return np.ascontiguousarray(features[:, :, r0:r1, c0:c1])
        return np.ascontiguousarray(features[:, list(self.columns)])


@dataclass(frozen=True)
class Partition:
    """A vertical partition of a data set's features among M parties."""

    scheme: str
    views: tuple[PartyView, ...]

    @property
    def num_parties(self) -> int:
        """Number of parties."""
        return len(self.views)

    def blocks(self, features: npt.NDArray[np.float32]) -> list[npt.NDArray[np.float32]]:
        """Every party's block of ``features``, in party order."""
        return [view.select(features) for view in self.views]

    def to_json(self) -> str:
        """JSON text for the run directory."""
        return json.dumps(
            {"scheme": self.scheme, "views": [asdict(v) for v in self.views]}, indent=2
        )

    @classmethod
    def from_json(cls, text: str) -> Partition:
        """Inverse of ``to_json``."""
        raw: dict[str, Any] = json.loads(text)
        views = tuple(
            PartyView(
                party=int(v["party"]),
                columns=tuple(v["columns"]),
                column_names=tuple(v["column_names"]),
                region=tuple(v["region"]),
            )
            for v in raw["views"]
        )
        return cls(scheme=str(raw["scheme"]), views=views)


def image_partition(
    shape: Sequence[int], scheme: str, num_parties: int, *, grid: Sequence[int] = ()
) -> Partition:
    """Split ``(C, H, W)`` images by region.

    ``halves``: left and right halves (2 parties, as FedBCD's 28x14 MNIST halves).
    ``quadrants``: top-left, top-right, bottom-left, bottom-right (4 parties).
    ``strips``: ``num_parties`` vertical strips of near-equal width, left to right.
    ``grid``: ``grid = (rows, cols)`` cells of near-equal size, numbered row by row from the top
    left; ``(2, 1)`` is the top and bottom halves of the common two-party MNIST benchmark.
    """
    _, height, width = shape
    if scheme == "grid":
        regions = _grid_regions(height, width, grid, num_parties)
    elif scheme == "halves":
        regions = [(0, height, 0, width // 2), (0, height, width // 2, width)]
    elif scheme == "quadrants":
        h, w = height // 2, width // 2
        regions = [(0, h, 0, w), (0, h, w, width), (h, height, 0, w), (h, height, w, width)]
    elif scheme == "strips":
        if not 1 <= num_parties <= width:
            raise ConfigError(
                f"partition.num_parties: {num_parties} strips do not fit an image"
                f" {width} pixels wide; use 1..{width}"
            )
        edges = np.linspace(0, width, num_parties + 1).round().astype(int)
        regions = [(0, height, int(a), int(b)) for a, b in itertools.pairwise(edges)]
    else:
        raise ConfigError(
            f"partition.scheme {scheme!r} does not apply to images; valid: halves,"
            " quadrants, strips, grid"
        )
    return Partition(scheme, tuple(PartyView(party=i + 1, region=r) for i, r in enumerate(regions)))


def _grid_regions(
    height: int, width: int, grid: Sequence[int], num_parties: int
) -> list[tuple[int, int, int, int]]:
    """Row-major ``(row_start, row_stop, col_start, col_stop)`` cells of a ``rows x cols`` grid."""
    if len(grid) != 2 or grid[0] * grid[1] != num_parties:
        raise ConfigError(
            f"partition.grid must be [rows, cols] with rows * cols = num_parties ({num_parties}),"
            f" got {list(grid)}"
        )
    rows, cols = grid
    if not (1 <= rows <= height and 1 <= cols <= width):
        raise ConfigError(
            f"partition.grid: {rows} x {cols} cells do not fit a {height} x {width} image"
        )
    row_edges = np.linspace(0, height, rows + 1).round().astype(int)
    col_edges = np.linspace(0, width, cols + 1).round().astype(int)
    return [
        (int(r0), int(r1), int(c0), int(c1))
        for r0, r1 in itertools.pairwise(row_edges)
        for c0, c1 in itertools.pairwise(col_edges)
    ]


def table_partition(
    columns: Sequence[str],
    sources: Sequence[str],
    scheme: str,
    num_parties: int,
    *,
    groups: Sequence[Sequence[str]] = (),
    seed: int = 0,
) -> Partition:
    """Split table columns among parties.

    Args:
        columns: Encoded column names.
        sources: The original column of each encoded column.
        scheme: ``columns`` (explicit ``groups``), ``contiguous`` or ``random``.
        num_parties: Number of parties.
        groups: For ``columns``: names per party; a name may be an original column (all its
            encoded columns go along) or an encoded column.
        seed: For ``random``.
    """
    originals = list(dict.fromkeys(sources))
    if scheme in ("contiguous", "random") and not 1 <= num_parties <= len(originals):
        raise ConfigError(
            f"partition.num_parties: {num_parties} parties cannot share"
            f" {len(originals)} columns; use 1..{len(originals)}"
        )
    if scheme == "columns":
        assignment = _explicit_groups(columns, sources, groups)
    elif scheme == "contiguous":
        chunks = np.array_split(np.arange(len(originals)), num_parties)
        assignment = _by_original(sources, [[originals[i] for i in c] for c in chunks])
    elif scheme == "random":
        order = np.random.default_rng(seed).permutation(len(originals))
        chunks = np.array_split(order, num_parties)
        assignment = _by_original(sources, [[originals[i] for i in c] for c in chunks])
    else:
        raise ConfigError(
            f"partition.scheme {scheme!r} does not apply to tables; valid: columns,"
            " contiguous, random"
        )
    views = tuple(
        PartyView(party=i + 1, columns=tuple(idx), column_names=tuple(columns[j] for j in idx))
        for i, idx in enumerate(assignment)
    )
    return Partition(scheme, views)


def _by_original(sources: Sequence[str], groups: list[list[str]]) -> list[list[int]]:
    return [sorted(j for j, s in enumerate(sources) if s in set(group)) for group in groups]


def _explicit_groups(
    columns: Sequence[str], sources: Sequence[str], groups: Sequence[Sequence[str]]
) -> list[list[int]]:
    owner: dict[int, int] = {}
    for party, group in enumerate(groups):
        if not group:
            raise ConfigError(f"partition.groups[{party}] is empty; every party needs a column")
        for name in group:
            matches = [
                j for j, (c, s) in enumerate(zip(columns, sources, strict=True)) if name in (c, s)
            ]
            if not matches:
                valid = ", ".join(dict.fromkeys(sources))
                raise ConfigError(
                    f"partition.groups[{party}]: no column named {name!r}; valid: {valid}"
                )
            for j in matches:
                if j in owner and owner[j] != party:
                    raise ConfigError(
                        f"partition.groups: column {columns[j]!r} is given to both"
                        f" party {owner[j] + 1} and party {party + 1}"
                    )
                owner[j] = party
    missing = [columns[j] for j in range(len(columns)) if j not in owner]
    if missing:
        names = list(dict.fromkeys(sources[j] for j in range(len(columns)) if j not in owner))
        raise ConfigError(
            f"partition.groups leave {len(names)} column(s) with no party: {', '.join(names)}"
            f" ({len(missing)} encoded column(s)); assign every column to one group"
        )
    return [sorted(j for j, p in owner.items() if p == party) for party in range(len(groups))]


def make_partition(
    dataset: Dataset,
    scheme: str,
    num_parties: int,
    *,
    groups: Sequence[Sequence[str]] = (),
    seed: int = 0,
    grid: Sequence[int] = (),
) -> Partition:
    """Partition ``dataset`` by the scheme that fits its kind (image or table)."""
    if dataset.is_image:
        return image_partition(dataset.sample_shape, scheme, num_parties, grid=grid)
    if dataset.columns is None:
        raise DataError(f"table data set {dataset.name!r} has no column names to partition by")
    sources = dataset.column_sources or dataset.columns
    return table_partition(dataset.columns, sources, scheme, num_parties, groups=groups, seed=seed)
