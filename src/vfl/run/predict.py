"""Prediction with a trained run: every role's bundle, the same roles, loop and transport.

``Model.load(RUN_DIR)`` reads the bundles a run exported; ``model.predict(...)`` gives each party
its block of the new rows (transformed with that party's own fitted preprocessing), builds the
parties and the label holder with the composition root exactly as training did, and asks for the
logits through the in-process transport: embeddings cross as in an evaluation (securely summed
with PBM, compressed where the run compresses evaluation traffic), and only the label holder sees
the predictions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pandas as pd
import torch
from torch import nn

from vfl.config import RunConfig
from vfl.errors import ConfigError, DataError
from vfl.protocol.loop import ServerLoop
from vfl.results.metrics import Task, evaluate_logits
from vfl.run import bundles
from vfl.run.compose import Blueprint, build_loop, build_party, build_server, local_transport
from vfl.run.models import ConfigModels
from vfl.run.table_rows import UNSEEN_COLUMN, Predictions, Rows, TableRows, label_indices
from vfl.wire import SPLIT_TEST

if TYPE_CHECKING:
    from vfl.run.tree_predict import TreeModel

__all__ = [
    "UNSEEN_COLUMN",
    "BundleModels",
    "Model",
    "Predictions",
    "Rows",
    "TableRows",
    "label_indices",
    "load_model",
    "probabilities",
]


class BundleModels:
    """A model source handing out the bundles' trained modules (optimizers unused).

    Args:
        config: The run config (the head replica and optimizers are built from it).
        bottoms: The trained bottom models, by party id.
        head: The trained head.
    """

    def __init__(self, config: RunConfig, bottoms: Mapping[int, nn.Module], head: nn.Module):
        self._config = ConfigModels(config)
        self._bottoms = bottoms
        self._head = head

    def bottom(self, party: int, block: torch.Tensor) -> nn.Module:
        """Party ``party``'s trained bottom."""
        return self._bottoms[party]

    def head(self, widths: Sequence[int], task: Task) -> nn.Module:
        """The trained head."""
        return self._head

    def head_replica(self, widths: Sequence[int], task: Task) -> nn.Module:
        """A fresh replica of the head (shared-labels parties; unused at prediction)."""
        return self._config.head_replica(widths, task)

    def optimizer(self, params: Iterable[nn.Parameter]) -> torch.optim.Optimizer | None:
        """The configured optimizer (roles need one; prediction never steps it)."""
        return self._config.optimizer(params)


class Model(TableRows):
    """A trained run, loaded from its bundles: predicts for new rows.

    Args:
        server: The label holder's bundle.
        parties: Every party's bundle, by party id.
    """

    def __init__(self, server: bundles.ServerBundle, parties: Mapping[int, bundles.PartyBundle]):
        prints = {"server": server.fingerprint}
        prints.update({f"party {p}": b.fingerprint for p, b in parties.items()})
        bundles.check_same_run(prints)
        if set(parties) != set(server.widths):
            raise ConfigError(
                f"the label holder fuses parties {sorted(server.widths)}; bundles were given for"
                f" {sorted(parties)}"
            )
        self.server = server
        self.parties = dict(sorted(parties.items()))

    @classmethod
    def load(
        cls,
        run_dir: Path | str,
        *,
        bottoms: Sequence[nn.Module] | None = None,
        head: nn.Module | None = None,
    ) -> Model:
        """The model a run exported into ``run_dir / bundle``.

        Args:
            run_dir: The run's directory (``bundle/`` inside).
            bottoms: For a model of your own modules (``vfl.export``): one bottom per party, in
                party order, of the architecture trained; the weights are loaded into them.
            head: Likewise, the head.

        Raises:
            DataError: naming a bundle file that is missing or malformed.
        """
        if not Path(run_dir).is_dir():
            raise DataError(f"run directory {str(run_dir)!r} does not exist")
        folder = Path(run_dir) / bundles.BUNDLE
        if not folder.is_dir():
            raise DataError(f"{folder} does not exist: the run exported no model bundles")
        server = bundles.load_server(folder / bundles.SERVER, head)
        if bottoms is not None and len(bottoms) != len(server.widths):
            raise ConfigError(
                f"got {len(bottoms)} bottom models for the {len(server.widths)} parties of"
                f" {run_dir}"
            )
        given = dict(zip(sorted(server.widths), bottoms or (), strict=False))
        parties = {
            p: bundles.load_party(folder / bundles.party_folder(p), given.get(p))
            for p in server.widths
        }
        return cls(server, parties)

    @property
    def config(self) -> RunConfig:
        """The run config."""
        return self.server.config

    @property
    def classes(self) -> tuple[str, ...]:
        """The class names, in class-index order."""
        return self.server.classes

    def predict(
        self,
        data: pd.DataFrame | Sequence[torch.Tensor],
        *,
        ids: npt.ArrayLike | None = None,
        labels: torch.Tensor | None = None,
        id_column: str = "",
    ) -> Predictions:
        """Class probabilities for new rows, with their IDs (and metrics, given labels).

        Args:
            data: A pandas DataFrame of raw columns (every party's, as ``vfl predict --data``
                reads; each party's own fitted preprocessing is applied), or one ``(n, ...)``
                float32 block per party (party order), rows aligned across parties.
            ids: The rows' sample ids (default: the frame's ID column, else 0..n-1).
            labels: The rows' class indices, to report metrics beside the predictions (default:
                the frame's label column, when it has one).
            id_column: The frame's ID column (default: the run's ``data.id_column``).

        Raises:
            DataError: naming the column, label or block that does not fit the model.
        """
        if isinstance(data, pd.DataFrame):
            rows = self.rows(data, id_column=id_column, where="the DataFrame")
            blocks: Sequence[torch.Tensor] = rows.blocks
            ids = rows.ids if ids is None else ids
            labels = rows.labels if labels is None else labels
        else:
            blocks = data
        count = _row_count(blocks, len(self.parties))
        known = labels if labels is not None else torch.zeros(count, dtype=torch.int64)
        loop = self._loop(blocks, known)
        try:
            loop.setup()
            logits = loop.logits(SPLIT_TEST)
        finally:
            loop.transport.close()
        task = loop.server.task
        metrics = None if labels is None else evaluate_logits(task, logits, labels)
        return Predictions(
            ids=np.arange(count) if ids is None else np.asarray(ids),
            classes=self.classes,
            probabilities=probabilities(task, logits),
            metrics=metrics,
        )

    def predict_proba(
        self, data: pd.DataFrame | Sequence[torch.Tensor], *, id_column: str = ""
    ) -> npt.NDArray[np.float64]:
        """``(n, C)`` class probabilities of new rows, columns in ``classes`` order.

        As scikit-learn's ``predict_proba``; ``data`` as in ``predict``.
        """
        return self.predict(data, id_column=id_column).probabilities

    def _loop(self, blocks: Sequence[torch.Tensor], labels: torch.Tensor) -> ServerLoop:
        config = self.config
        source = BundleModels(
            config, {p: b.model for p, b in self.parties.items()}, self.server.head
        )
        blueprint = Blueprint(config, source)
        task = Task(len(self.classes))
        unknown = torch.zeros(len(labels), dtype=torch.int64)  # no training: labels unused
        parties = [
            build_party(
                blueprint,
                party,
                block,
                block,
                task=task,
                train_labels=unknown,
                widths=self.server.widths,
            )
            for party, block in zip(self.parties, blocks, strict=True)
        ]
        server = build_server(
            blueprint,
            task=task,
            train_labels=unknown,
            test_labels=labels,
            widths=self.server.widths,
        )
        return build_loop(blueprint, server, local_transport(config, parties))


def probabilities(task: Task, logits: torch.Tensor) -> npt.NDArray[np.float64]:
    """``(n, C)`` class probabilities from logits (sigmoid for binary tasks, else softmax)."""
    if task.binary:
        positive = torch.sigmoid(logits[:, 0].double())
        return torch.stack([1 - positive, positive], dim=1).numpy()
    return torch.softmax(logits.double(), dim=1).numpy()


def _row_count(blocks: Sequence[torch.Tensor], parties: int) -> int:
    if len(blocks) != parties:
        raise DataError(f"got {len(blocks)} feature blocks for {parties} parties")
    counts = {len(block) for block in blocks}
    if len(counts) != 1 or not counts.pop():
        sizes = [len(block) for block in blocks]
        raise DataError(f"every party's block must hold the same rows, at least one; got {sizes}")
    return len(blocks[0])


def load_model(
    run_dir: Path | str,
    *,
    bottoms: Sequence[nn.Module] | None = None,
    head: nn.Module | None = None,
) -> Model | TreeModel:
    """The model a run exported into ``run_dir / bundle`` (see ``Model.load``).

    A tree run's (``protocol.name = "secureboost"``) is a ``vfl.run.tree_predict.TreeModel``,
    which predicts alike.
    """
    from vfl.run.tree_bundles import is_tree_bundle
    from vfl.run.tree_predict import TreeModel

    if is_tree_bundle(Path(run_dir)):
        if bottoms is not None or head is not None:
            raise ConfigError(f"{run_dir} holds a tree model: it takes no bottoms or head")
        return TreeModel.load(run_dir)
    return Model.load(run_dir, bottoms=bottoms, head=head)
