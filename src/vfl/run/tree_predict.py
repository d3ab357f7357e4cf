"""Prediction with a tree run's bundles: the label holder walks its trees, asking each owner.

``TreeModel.load(RUN_DIR)`` reads every holder's bundle (``vfl.run.tree_bundles``); ``predict``
gives each holder its block of the new rows (made by its own fitted preprocessing), and the label
holder routes them through every tree as in training's evaluation: one route request per owner
and depth, through the in-process transport in wire frames. Only the label holder sees the
predictions; each owner applies only its own thresholds.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
import torch

from vfl.boost.link import PREDICT_PHASE, TransportLink, local_link
from vfl.boost.objectives import Objective
from vfl.boost.owner import SplitOwner
from vfl.boost.predict import margins, route
from vfl.boost.tree import SplitTable
from vfl.config import RunConfig
from vfl.errors import ConfigError, DataError
from vfl.results.metrics import Task, evaluate_logits
from vfl.run import bundles
from vfl.run.table_rows import Predictions, TableRows
from vfl.run.tree_bundles import (
    HolderBundle,
    LabelHolderBundle,
    load_holder,
    load_label_holder,
)

TABLE = "predict"
"""The name under which every owner holds the rows to score."""


class TreeModel(TableRows):
    """A trained tree run, loaded from its bundles: predicts for new rows.

    Args:
        label_holder: The label holder's bundle.
        parties: Every holder of columns' bundle, by party id.
    """

    def __init__(self, label_holder: LabelHolderBundle, parties: dict[int, HolderBundle]):
        prints = {"label holder": label_holder.fingerprint}
        prints.update({f"party {p}": b.fingerprint for p, b in parties.items()})
        bundles.check_same_run(prints)
        if sorted(parties) != sorted(label_holder.holders):
            raise ConfigError(
                f"the label holder's trees name holders {list(label_holder.holders)}; bundles"
                f" were given for {sorted(parties)}"
            )
        self.label_holder = label_holder
        self.parties = dict(sorted(parties.items()))

    @classmethod
    def load(cls, run_dir: Path | str) -> TreeModel:
        """The tree model a run exported into ``run_dir / bundle``.

        Raises:
            DataError: naming a bundle file that is missing, damaged or of another run.
        """
        folder = Path(run_dir) / bundles.BUNDLE
        label_holder = load_label_holder(folder / bundles.SERVER)
        parties = {p: load_holder(folder / bundles.party_folder(p)) for p in label_holder.holders}
        return cls(label_holder, parties)

    @property
    def config(self) -> RunConfig:
        """The run config."""
        return self.label_holder.config

    @property
    def classes(self) -> tuple[str, ...]:
        """The class names, in class-index order."""
        return self.label_holder.classes

    def predict_margins(
        self, blocks: Sequence[torch.Tensor | npt.NDArray[np.floating]]
    ) -> npt.NDArray[np.float64]:
        """The trees' summed margins (log-odds for ``binary:logistic``) of rows given by block."""
        count = _row_count(blocks, len(self.parties))
        matrices = {
            p: np.asarray(block, dtype=np.float64).reshape(count, -1)
            for p, block in zip(self.parties, blocks, strict=True)
        }
        owners = {}
        for party, bundle in self.parties.items():
            owner = SplitOwner(party, bundle.splits, bundle.width)
            owner.attach(TABLE, matrices[party])
            owners[party] = owner
        holder = self.label_holder
        own_splits = owners.pop(holder.party).splits if holder.party in owners else SplitTable()
        own = matrices.get(holder.party, np.zeros((count, 0)))
        link = local_link(owners)
        try:
            return tree_margins(holder, link, TABLE, own_splits, own)
        finally:
            link.transport.close()

    def predict(
        self,
        data: pd.DataFrame | Sequence[torch.Tensor],
        *,
        ids: npt.ArrayLike | None = None,
        labels: torch.Tensor | None = None,
        id_column: str = "",
    ) -> Predictions:
        """Class probabilities for new rows, as ``vfl.run.predict.Model.predict``."""
        if isinstance(data, pd.DataFrame):
            rows = self.rows(data, id_column=id_column, where="the DataFrame")
            blocks: Sequence[torch.Tensor] = rows.blocks
            ids = rows.ids if ids is None else ids
            labels = rows.labels if labels is None else labels
        else:
            blocks = data
        scores = self.predict_margins(blocks)
        positive = Objective(self.label_holder.objective).output(scores)
        logits = torch.from_numpy(scores).reshape(-1, 1)
        metrics = None if labels is None else evaluate_logits(Task(2), logits, labels)
        return Predictions(
            ids=np.arange(len(scores)) if ids is None else np.asarray(ids),
            classes=self.classes,
            probabilities=np.stack([1 - positive, positive], axis=1),
            metrics=metrics,
        )

    def predict_proba(
        self, data: pd.DataFrame | Sequence[torch.Tensor], *, id_column: str = ""
    ) -> npt.NDArray[np.float64]:
        """``(n, 2)`` class probabilities of new rows, columns in ``classes`` order."""
        return self.predict(data, id_column=id_column).probabilities


def tree_margins(
    label_holder: LabelHolderBundle,
    link: TransportLink,
    table: str,
    own_splits: SplitTable,
    own_features: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """The label holder's margins of the rows every owner keeps as ``table``.

    It walks all trees a depth at a time, asking each owner through ``link`` once per depth
    which rows go left at its records (in one process or over gRPC alike); ``own_splits`` and
    ``own_features`` are its own columns' rules and rows (none: an empty table and ``(n, 0)``).
    """
    link.phase = PREDICT_PHASE
    trees = label_holder.trees
    positions = route(trees, label_holder.party, own_splits, own_features, link, table)
    return margins(trees, positions, label_holder.base_margin)


def _row_count(blocks: Sequence[object], parties: int) -> int:
    if len(blocks) != parties:
        raise DataError(f"got {len(blocks)} feature blocks for {parties} holders of columns")
    counts = {len(block) for block in blocks}  # type: ignore[arg-type]
    if len(counts) != 1 or not (count := counts.pop()):
        raise DataError(
            f"every holder's block must hold the same rows, at least one; got {sorted(counts)}"
        )
    return count
