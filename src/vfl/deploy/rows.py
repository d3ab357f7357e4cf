"""A party's own rows to score: its current table, looked up by ID, encoded by its own bundle.

The table is a CSV or Parquet file, read again whenever it changes (its size or modification
time; replace it atomically, e.g. write a new file and rename it over the old one), or a SQLite
database queried at every lookup. IDs are matched by their text, as in alignment.

Each lookup gives one feature row per requested ID, encoded with the party's fitted encoding
(``vfl.data.encoding``), and says which IDs cannot be scored and why, naming the column but
never the party's values (the reasons go to the label holder): an ID the table lacks, a column
the table lacks (every ID fails), a cell of a numeric column that is not a finite number. A
category unseen in training encodes as all zeros, the training rule, with a note naming the
column.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from vfl.data.encoding import CategoricalColumn, NumericColumn, TableEncoder, category_keys
from vfl.data.table import read_table, sample_ids
from vfl.errors import DataError
from vfl.run.bundles import PartyBundle

log = logging.getLogger(__name__)

SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
PIXEL_SCALE = 255.0


def party_encoder(bundle: PartyBundle) -> TableEncoder:
    """The encoding of a party's raw columns: its fitted one, or the pixels of its image region.

    An image party's table holds one column per pixel of its region, named
    ``px_<row>_<col>`` (``px_<channel>_<row>_<col>`` for several channels) in the whole image's
    coordinates, with intensities 0..255; they are scaled to 0..1 as the image loaders do.
    """
    encoder = bundle.encoder
    if encoder is not None:
        return encoder
    r0, r1, c0, c1 = (int(v) for v in bundle.preprocessing["region"])
    channels = bundle.block_shape[0]
    names = [
        f"px_{channel}_{row}_{col}" if channels > 1 else f"px_{row}_{col}"
        for channel in range(channels)
        for row in range(r0, r1)
        for col in range(c0, c1)
    ]
    return TableEncoder(tuple(NumericColumn(name, 0.0, PIXEL_SCALE, False) for name in names))


@dataclass(frozen=True)
class Looked:
    """The encoded rows of one lookup and what went wrong with some of them.

    Attributes:
        block: ``(n, D)`` float32 features in request order; zeros where an ID failed.
        failed: Why each failed position cannot be scored.
        notes: A remark on positions that are scored (an unseen category).
    """

    block: torch.Tensor
    failed: dict[int, str] = field(default_factory=dict)
    notes: dict[int, str] = field(default_factory=dict)


class TableRows:
    """Looks rows up by ID in a party's current table and encodes them.

    Args:
        party_id: The party (named in every reason).
        path: The table: CSV, Parquet, or a SQLite database (``.db``, ``.sqlite``).
        id_column: The column of IDs.
        encoder: The party's fitted encoding, from its model bundle.
        sqlite_table: The table of a SQLite database that holds the rows.

    Raises:
        DataError: if the table cannot be read, lacks the ID column or repeats an ID.
    """

    def __init__(
        self,
        party_id: int,
        path: Path,
        *,
        id_column: str,
        encoder: TableEncoder,
        sqlite_table: str = "features",
    ) -> None:
        self.party_id = party_id
        self.path = Path(path)
        self.id_column = id_column
        self.encoder = encoder
        self.sqlite_table = sqlite_table
        self._sqlite = self.path.suffix.lower() in SQLITE_SUFFIXES
        self._stamp: tuple[int, int] | None = None
        self._frame = pd.DataFrame()
        self._rows: dict[str, int] = {}
        if self._sqlite:
            self._query([])  # fails now, naming the file, if the database cannot be read
        else:
            self._load()

    def lookup(self, ids: Sequence[str]) -> Looked:
        """The encoded rows of ``ids`` (reading the table again first if it changed)."""
        frame, found = self._sqlite_rows(ids) if self._sqlite else self._file_rows(ids)
        return encode_rows(self.party_id, self.encoder, frame, found, len(ids), self._source)

    def all_rows(self) -> tuple[np.ndarray, pd.DataFrame]:
        """Every ID of a file table and its raw rows (batch prediction)."""
        return np.asarray(list(self._rows)), self._frame

    @property
    def _source(self) -> str:
        return f"party {self.party_id}'s table {self.path.name}"

    def _file_rows(self, ids: Sequence[str]) -> tuple[pd.DataFrame, list[int]]:
        self._reload_if_changed()
        found = [i for i, key in enumerate(ids) if key in self._rows]
        rows = [self._rows[ids[i]] for i in found]
        return self._frame.iloc[rows].reset_index(drop=True), found

    def _sqlite_rows(self, ids: Sequence[str]) -> tuple[pd.DataFrame, list[int]]:
        frame = self._query(ids)
        keys = frame[self.id_column].astype(str).tolist()
        where = {key: row for row, key in enumerate(keys)}
        found = [i for i, key in enumerate(ids) if key in where]
        return frame.iloc[[where[ids[i]] for i in found]].reset_index(drop=True), found

    def _query(self, ids: Sequence[str]) -> pd.DataFrame:
        table = '"' + self.sqlite_table.replace('"', '""') + '"'
        column = '"' + self.id_column.replace('"', '""') + '"'
        marks = ", ".join("?" * len(ids)) or "NULL"
        sql = f"SELECT * FROM {table} WHERE CAST({column} AS TEXT) IN ({marks})"
        try:
            with sqlite3.connect(f"file:{self.path}?mode=ro", uri=True) as connection:
                return pd.read_sql_query(sql, connection, params=list(ids))
        except (sqlite3.Error, pd.errors.DatabaseError) as error:
            raise DataError(
                f"cannot read table {self.sqlite_table!r} of SQLite database {self.path}: {error}"
            ) from None

    def _reload_if_changed(self) -> None:
        try:
            stat = os.stat(self.path)
        except OSError as error:
            log.warning(
                "party %d: cannot read %s (%s); keeping its last rows",
                self.party_id,
                self.path,
                error,
            )
            return
        if (stat.st_mtime_ns, stat.st_size) == self._stamp:
            return
        try:
            self._load()
        except DataError as error:
            self._stamp = (stat.st_mtime_ns, stat.st_size)  # report a bad file once
            log.warning("party %d: %s; keeping the rows read before", self.party_id, error)

    def _load(self) -> None:
        stat = os.stat(self.path)
        skip = (self.id_column, *self.encoder.raw_columns)
        frame = read_table(self.path, bad_numbers="missing", skip=skip)
        if self.id_column not in frame.columns:
            raise DataError(f"{self.path} has no ID column {self.id_column!r}")
        ids = sample_ids(frame, self.id_column, self.path)
        self._frame = frame
        self._rows = {str(value): row for row, value in enumerate(ids.tolist())}
        self._stamp = (stat.st_mtime_ns, stat.st_size)
        log.info("party %d: read %d rows from %s", self.party_id, len(frame), self.path)


def encode_rows(
    party: int,
    encoder: TableEncoder,
    frame: pd.DataFrame,
    found: list[int],
    count: int,
    source: str,
) -> Looked:
    """Encode ``frame``: the rows of positions ``found`` among ``count`` requested IDs.

    Positions not found fail as unknown IDs; a missing column fails every position.
    """
    failed = dict.fromkeys(range(count), f"party {party} holds no row with this ID")
    for position in found:
        del failed[position]
    absent = [name for name in encoder.raw_columns if name not in frame.columns]
    if absent:
        reason = f"{source} has no column(s) {absent}, which its model was trained on"
        return Looked(torch.zeros((count, len(encoder.names))), dict.fromkeys(range(count), reason))
    clean, bad, remarks = _checked(encoder, frame, source)
    failed.update({found[row]: reason for row, reason in bad.items()})
    block = np.zeros((count, len(encoder.names)), dtype=np.float32)
    if found:
        block[found] = encoder.transform(clean, where=source)
    block[list(failed)] = 0.0
    notes = {found[row]: note for row, note in remarks.items() if found[row] not in failed}
    return Looked(torch.from_numpy(block), failed, notes)


def _checked(
    encoder: TableEncoder, frame: pd.DataFrame, source: str
) -> tuple[pd.DataFrame, dict[int, str], dict[int, str]]:
    """``frame`` with bad numbers blanked; rows holding bad numbers; rows with unseen categories."""
    clean = frame.copy()
    bad: dict[int, str] = {}
    notes: dict[int, str] = {}
    for column in encoder.columns:
        if isinstance(column, NumericColumn):
            values, wrong = _numbers(frame[column.name])
            clean[column.name] = values
            reason = (
                f"{source}: numeric column {column.name!r} holds a value that is not a finite"
                " number for this ID"
            )
            bad.update(dict.fromkeys(np.flatnonzero(wrong).tolist(), reason))
        elif isinstance(column, CategoricalColumn):
            known = set(column.categories)
            note = (
                f"{source}: column {column.name!r} holds a category unseen in training, encoded"
                " as all zeros"
            )
            keys = category_keys(frame[column.name])
            notes.update({row: note for row, key in enumerate(keys) if key not in known})
    return clean, bad, notes


def _numbers(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A numeric column as float64 (NaN where missing or bad) and where it is not a number."""
    parsed = pd.to_numeric(series.astype("string").str.strip(), errors="coerce")
    values = parsed.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = (series.notna().to_numpy(dtype=bool) & np.isnan(values)) | np.isinf(values)
    return np.where(bad, np.nan, values), bad
