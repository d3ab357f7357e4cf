"""A tree run's checkpoint: after every tree, what each holder needs to go on, in plain JSON.

``trees-checkpoint.json`` holds, per holder, only that holder's knowledge: the label holder's
trees, own split rules and training margins (its predictions so far, kept so that a resumed run
adds the next tree to exactly the same numbers), each passive holder's split rules. No key: a
resumed run draws a fresh Paillier key, which changes no tree (the protocol is exact). The file
is written to a temporary name and renamed over the last one, so a kill leaves the previous
checkpoint whole; a SHA-256 of its content, inside it, catches damage on reading.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from vfl.boost.state import splits_from_plain, splits_to_plain, tree_from_plain, tree_to_plain
from vfl.boost.tree import SplitTable, Tree
from vfl.errors import ConfigError, DataError
from vfl.results.files import TREE_CHECKPOINT, RunDirectory, RunFileError

FORMAT = "vfl-trees-checkpoint/1"


@dataclass
class TreeState:
    """Where a tree run stands after its last complete tree.

    Attributes:
        trees: The label holder's trees.
        label_splits: The label holder's own split rules.
        margins: The label holder's training margins after those trees.
        holder_splits: Each passive holder's split rules, by party.
        elapsed: Seconds of training so far.
        config: The resolved config (TOML) the run trains with.
        bytes: Frame bytes so far: ``up`` and ``down`` in training, ``eval`` for the test rows.
    """

    trees: list[Tree]
    label_splits: SplitTable
    margins: npt.NDArray[np.float64]
    holder_splits: dict[int, SplitTable]
    elapsed: float
    config: str
    bytes: dict[str, int]

    @property
    def trees_done(self) -> int:
        """Complete trees."""
        return len(self.trees)


def save(run: RunDirectory, state: TreeState) -> None:
    """Write ``state`` atomically over the last checkpoint, with its checksum."""
    body = {
        "format": FORMAT,
        "trees_done": state.trees_done,
        "elapsed": state.elapsed,
        "config": state.config,
        "bytes": state.bytes,
        "label_holder": {
            "trees": [tree_to_plain(tree) for tree in state.trees],
            "splits": splits_to_plain(state.label_splits),
            "margins": state.margins.tolist(),
        },
        "holders": {str(p): splits_to_plain(s) for p, s in sorted(state.holder_splits.items())},
    }
    text = json.dumps(body, sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()
    run.write_text(TREE_CHECKPOINT, json.dumps({"sha256": digest, "body": body}) + "\n")


def load(run: RunDirectory) -> TreeState:
    """The checkpoint of ``run``.

    Raises:
        ConfigError: if there is none.
        RunFileError: naming the file if it is cut short, damaged or not a tree checkpoint.
    """
    path = run.file(TREE_CHECKPOINT)
    if not path.exists():
        raise ConfigError(
            f"no tree checkpoint in {str(run.path)!r}; cannot resume (was the run started with"
            " train.checkpoint = false, or stopped before its first tree?)"
        )
    try:
        outer = json.loads(path.read_text())
        body = outer["body"]
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise _damaged(path, f"not a checkpoint's JSON: {error}") from None
    if outer.get("sha256") != digest:
        raise _damaged(path, "its content differs from its checksum")
    if body.get("format") != FORMAT:
        raise _damaged(path, f"format {body.get('format')!r} is not {FORMAT!r}")
    try:
        return _state(body, str(path))
    except (DataError, KeyError, TypeError, ValueError) as error:
        raise _damaged(path, str(error)) from None


def _state(body: dict[str, Any], where: str) -> TreeState:
    label = body["label_holder"]
    trees = [tree_from_plain(t, f"{where}: tree {i}") for i, t in enumerate(label["trees"])]
    margins = np.array(label["margins"], dtype=np.float64)
    if margins.ndim != 1 or not np.isfinite(margins).all():
        raise DataError("the training margins are not one finite number per row")
    elapsed = float(body["elapsed"])
    if len(trees) != int(body["trees_done"]) or not math.isfinite(elapsed):
        raise DataError("its tree count or elapsed time does not add up")
    return TreeState(
        trees=trees,
        label_splits=splits_from_plain(label["splits"], f"{where}: label holder's splits"),
        margins=margins,
        holder_splits={
            int(p): splits_from_plain(s, f"{where}: party {p}'s splits")
            for p, s in body["holders"].items()
        },
        elapsed=elapsed,
        config=str(body["config"]),
        bytes={key: int(body["bytes"][key]) for key in ("up", "down", "eval")},
    )


def _damaged(path: object, why: str) -> RunFileError:
    return RunFileError(
        f"tree checkpoint {str(path)!r} cannot be read ({why}); it is cut short or corrupt, so"
        " the run cannot resume from it: start a new run"
    )
