"""Bundles of a tree run: each holder's own knowledge, in JSON with checksums, never pickle.

A tree run exports into ``RUN_DIR/bundle/``::

    server/    manifest.json  config.toml  trees.json
    party-<k>/ manifest.json  config.toml  splits.json  preprocessing.json

``server/`` is the label holder's: every tree's shape, each split's owner and record number, the
leaf weights, the base score and the objective (no threshold of another holder). Each
``party-<k>/`` is one holder's: its split rules by record number (column, bin, threshold, where
missing values go) and its own fitted preprocessing; the label holder's own columns are its
``party-<k>`` (or none with ``protocol.active_party = 0``). Every file carries the run's
fingerprint (``vfl.run.bundles.fingerprint``), and each manifest the SHA-256 of its model file,
so a damaged file or one from another run is refused in one line naming it.

A deployment writes the same bundles, each role where it runs: the server (the label holder,
no columns) ``RUN_DIR/bundle/server/``, party *k* ``STATE_DIR/bundle/party-<k>/``
(``write_label_holder``, ``write_holder``); gathered in one folder they predict with
``vfl predict`` as a simulated run's do.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vfl.boost.active import ActiveBooster
from vfl.boost.params import OBJECTIVES
from vfl.boost.passive import PassiveBooster
from vfl.boost.state import splits_from_plain, splits_to_plain, tree_from_plain, tree_to_plain
from vfl.boost.tree import SplitTable, Tree
from vfl.config import RunConfig
from vfl.data.dataset import Dataset
from vfl.data.encoding import TableEncoder
from vfl.data.partition import Partition
from vfl.errors import DataError
from vfl.results.files import RunDirectory, set_aside
from vfl.run.bundle_files import CONFIG, FINGERPRINT, MANIFEST, PREPROCESSING, read_role
from vfl.run.bundles import (
    BUNDLE,
    SERVER,
    fingerprint,
    partition_identity,
    party_folder,
    preprocessing_of,
    shared_config,
)

FORMAT = "vfl-trees/1"
TREES = "trees.json"
SPLITS = "splits.json"
LABEL_HOLDER, HOLDER = "tree-label-holder", "tree-holder"


@dataclass(frozen=True)
class LabelHolderBundle:
    """What the label holder keeps of a tree run."""

    fingerprint: str
    config: RunConfig
    party: int
    holders: tuple[int, ...]
    classes: tuple[str, ...]
    trees: list[Tree]
    objective: str
    base_margin: float


@dataclass(frozen=True)
class HolderBundle:
    """What one holder of columns keeps: its split rules, width and preprocessing."""

    party: int
    fingerprint: str
    splits: SplitTable
    width: int
    preprocessing: dict[str, Any]

    @property
    def encoder(self) -> TableEncoder | None:
        """The fitted encoding of its raw columns (tables only)."""
        if self.preprocessing.get("kind") != "table":
            return None
        return TableEncoder.from_dict(self.preprocessing["encoder"])


def is_tree_folder(folder: Path) -> bool:
    """Whether ``folder`` holds one role's bundle of a tree model."""
    try:
        return bool(json.loads((Path(folder) / MANIFEST).read_text()).get("format") == FORMAT)
    except (OSError, ValueError, AttributeError):
        return False


def is_tree_bundle(run_dir: Path) -> bool:
    """Whether ``run_dir``'s label-holder bundle is a tree model's."""
    return is_tree_folder(Path(run_dir) / BUNDLE / SERVER)


def export_trees(
    run: RunDirectory,
    config: RunConfig,
    active: ActiveBooster,
    passives: Mapping[int, PassiveBooster],
    partition: Partition,
    dataset: Dataset,
) -> Path:
    """Write every holder's bundle into ``RUN_DIR/bundle``; returns that folder."""
    folder = run.file(BUNDLE)
    run_print = fingerprint(config, partition_identity(partition))
    owners = {p: h.splits for p, h in passives.items()}
    if active.party in range(1, len(partition.views) + 1):
        owners[active.party] = active.splits
    write_label_holder(folder / SERVER, config, run_print, active, sorted(owners), dataset.classes)
    for party, splits in sorted(owners.items()):
        view = partition.views[party - 1]
        write_holder(
            folder / party_folder(party),
            config,
            run_print,
            party=party,
            splits=splits,
            width=len(view.column_names),
            preprocessing=preprocessing_of(view, dataset.encoder),
        )
    return folder


def write_label_holder(
    target: Path,
    config: RunConfig,
    run_print: str,
    active: ActiveBooster,
    holders: Sequence[int],
    classes: Sequence[str],
) -> Path:
    """Write the label holder's bundle (trees, leaf weights, no threshold) into ``target``.

    ``holders``: the parties whose split rules the trees name (the label holder's own party
    among them when it holds columns). A bundle already in ``target`` is set aside first.
    """
    model = {
        "objective": active.objective.name,
        "base_score": active.base_score,
        "base_margin": active.base_margin,
        "trees": [tree_to_plain(tree) for tree in active.trees],
    }
    manifest = {"party": active.party, "holders": sorted(holders), "classes": list(classes)}
    _write(target, LABEL_HOLDER, run_print, config, TREES, model, manifest)
    return target


def write_holder(
    target: Path,
    config: RunConfig,
    run_print: str,
    *,
    party: int,
    splits: SplitTable,
    width: int,
    preprocessing: dict[str, Any],
) -> Path:
    """Write one holder's bundle (its split rules, its encoding) into ``target``.

    A bundle already in ``target`` is set aside first.
    """
    model = {"splits": splits_to_plain(splits)}
    extra = {"party": party, "columns": width}
    _write(target, HOLDER, run_print, shared_config(config), SPLITS, model, extra)
    stamped = {FINGERPRINT: run_print, **preprocessing}
    (target / PREPROCESSING).write_text(json.dumps(stamped, indent=2) + "\n")
    return target


def _write(
    target: Path,
    role: str,
    run_print: str,
    config: RunConfig,
    name: str,
    model: dict[str, Any],
    extra: dict[str, Any],
) -> None:
    from vfl.config.io import to_toml

    if target.is_dir() and any(target.iterdir()):
        set_aside(target, "replaced")
    target.mkdir(parents=True, exist_ok=True)
    text = json.dumps({FINGERPRINT: run_print, **model}, indent=1) + "\n"
    (target / name).write_text(text)
    (target / CONFIG).write_text(f'{FINGERPRINT} = "{run_print}"\n\n' + to_toml(config))
    manifest = {
        "format": FORMAT,
        "role": role,
        FINGERPRINT: run_print,
        "model": name,
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        **extra,
    }
    (target / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


def _model(folder: Path, role: str) -> tuple[dict[str, Any], RunConfig, dict[str, Any]]:
    """A role's manifest, config and model file, each checked against the manifest."""
    manifest, config = read_role(folder, role, bundle_format=FORMAT)
    path = folder / str(manifest.get("model"))
    if not path.is_file():
        raise DataError(f"{path} is missing: not a complete bundle")
    text = path.read_text()
    if hashlib.sha256(text.encode()).hexdigest() != manifest.get("sha256"):
        raise DataError(
            f"{path} differs from the checksum its manifest records: the file is damaged or"
            " was edited; export the bundle again (or copy it whole from the run)"
        )
    model: dict[str, Any] = json.loads(text)
    if model.pop(FINGERPRINT, None) != manifest[FINGERPRINT]:
        raise DataError(f"{path} comes from another run than its manifest")
    return manifest, config, model


def load_label_holder(folder: Path) -> LabelHolderBundle:
    """The label holder's bundle.

    Raises:
        DataError: naming the file that is missing, damaged or of another run.
    """
    manifest, config, model = _model(folder, LABEL_HOLDER)
    try:
        trees = [
            tree_from_plain(t, f"{folder / TREES} tree {i}") for i, t in enumerate(model["trees"])
        ]
        bundle = LabelHolderBundle(
            str(manifest[FINGERPRINT]),
            config,
            int(manifest["party"]),
            tuple(int(p) for p in manifest["holders"]),
            tuple(str(c) for c in manifest["classes"]),
            trees,
            str(model["objective"]),
            float(model["base_margin"]),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise DataError(f"{folder / TREES} is not a tree model ({error!r})") from None
    _check_model(folder / TREES, bundle)
    return bundle


def _check_model(path: Path, bundle: LabelHolderBundle) -> None:
    """The objective is known and every split's owner is one of the model's holders."""
    if bundle.objective not in OBJECTIVES:
        raise DataError(f"{path}: objective {bundle.objective!r} is not one of {list(OBJECTIVES)}")
    known = {bundle.party, *bundle.holders}
    for t, tree in enumerate(bundle.trees):
        for position, node in enumerate(tree.nodes):
            if not node.is_leaf and node.owner not in known:
                raise DataError(
                    f"{path}: tree {t} node {position} is split by party {node.owner}, which is"
                    f" not one of the model's holders {sorted(known)}"
                )


def load_holder(folder: Path) -> HolderBundle:
    """One holder's bundle.

    Raises:
        DataError: naming the file that is missing, damaged or of another run.
    """
    from vfl.run.bundle_files import read_preprocessing

    manifest, _, model = _model(folder, HOLDER)
    width = manifest.get("columns")
    if not isinstance(width, int) or width < 0:
        raise DataError(f"{folder / MANIFEST} names no column count")
    run_print = str(manifest[FINGERPRINT])
    splits = splits_from_plain(model.get("splits"), str(folder / SPLITS), width)
    preprocessing = read_preprocessing(folder, run_print)
    return HolderBundle(int(manifest["party"]), run_print, splits, width, preprocessing)
