"""SecureBoost bundles written by holder (as a deployment writes them): saved and loaded exactly,
each holder's own part only, a corrupt or foreign one refused in one line, an old one kept."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.boost.helpers import TEST_KEY_BITS, vertical_table
from vfl.boost import BoostParams, train_secureboost
from vfl.boost.driver import SecureBoostRun
from vfl.config import RunConfig
from vfl.errors import ConfigError, DataError
from vfl.run.tree_bundles import (
    load_holder,
    load_label_holder,
    write_holder,
    write_label_holder,
)
from vfl.run.tree_predict import TreeModel

PARAMS = BoostParams(num_trees=3, max_depth=3, learning_rate=0.3, max_bin=8)
TABLE = {"kind": "tensor"}  # no raw-column encoder: rows are given as blocks


def trained() -> tuple[SecureBoostRun, dict[int, np.ndarray]]:
    labels, blocks = vertical_table(200, (1, 2, 2), seed=11, missing=0.1)
    run = train_secureboost(
        labels[:150],
        {p: b[:150] for p, b in blocks.items()},
        PARAMS,
        key_bits=TEST_KEY_BITS,
        insecure_test_key=True,
        workers=1,
    )
    return run, {p: b[150:] for p, b in blocks.items()}


def save_all(run: SecureBoostRun, folder: Path, run_print: str = "run-a") -> None:
    """The label holder (party 1, with columns of its own) and each holder, in its own folder."""
    config = RunConfig()
    holders = [run.active.party, *run.passives]
    write_label_holder(folder / "server", config, run_print, run.active, holders, ("no", "yes"))
    owners = {run.active.party: (run.active.splits, len(run.active.bins))}
    owners.update({p: (h.splits, len(h.bins)) for p, h in run.passives.items()})
    for party, (splits, width) in owners.items():
        target = folder / f"party-{party}"
        write_holder(
            target, config, run_print, party=party, splits=splits, width=width, preprocessing=TABLE
        )


def edit(folder: Path, name: str, change: Callable[[dict[str, Any]], object]) -> None:
    """Change a model file and record its new checksum (a consistent, wrong bundle)."""
    path = folder / name
    data = json.loads(path.read_text())
    change(data)
    text = json.dumps(data)
    path.write_text(text)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest))


def model_of(folder: Path) -> TreeModel:
    label_holder = load_label_holder(folder / "server")
    return TreeModel(
        label_holder, {p: load_holder(folder / f"party-{p}") for p in label_holder.holders}
    )


def test_bundles_predict_exactly_what_the_trained_model_does(tmp_path: Path) -> None:
    # Prepare
    run, new = trained()
    save_all(run, tmp_path)

    # Execute
    margins = model_of(tmp_path).predict_margins([new[p] for p in (1, 2, 3)])

    # Assert: bit for bit, and each holder's file holds its own rules, only those
    assert np.array_equal(run.active.objective.output(margins), run.predict("new", new))
    assert len(set(np.round(margins, 9))) > 2  # not a constant model
    owners = {1: run.active.splits, **{p: h.splits for p, h in run.passives.items()}}
    for party, own in owners.items():
        saved = json.loads((tmp_path / f"party-{party}" / "splits.json").read_text())
        assert [tuple(rule) for rule in saved["splits"]] == [
            (r.column, r.bin, r.threshold, r.missing_left) for r in own.rules
        ]
    assert all(h.splits.rules for h in run.passives.values())
    assert "threshold" not in (tmp_path / "server" / "trees.json").read_text()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("trees"), "is not a tree model"),
        (lambda d: d["trees"][0][0].__setitem__(3, 0), "tree 0 node 0 is not a valid node"),
        (lambda d: d["trees"][0][0].__setitem__(1, 7), "split by party 7, which is not one"),
        (lambda d: d.__setitem__("objective", "rank:pairwise"), "rank:pairwise"),
    ],
)
def test_a_corrupt_label_holder_bundle_is_one_clear_line(
    tmp_path: Path, change: Callable[[dict[str, Any]], object], message: str
) -> None:
    # Prepare
    run, _ = trained()
    save_all(run, tmp_path)
    edit(tmp_path / "server", "trees.json", change)

    # Execute / Assert
    with pytest.raises(DataError, match=message):
        load_label_holder(tmp_path / "server")


def test_a_holder_rule_out_of_range_damage_and_a_missing_bundle_are_refused(
    tmp_path: Path,
) -> None:
    # Prepare
    run, _ = trained()
    save_all(run, tmp_path)
    holder = tmp_path / "party-2"
    width = len(run.passives[2].bins)

    # Execute / Assert
    edit(holder, "splits.json", lambda d: d["splits"][0].__setitem__(0, width))
    with pytest.raises(DataError, match="record 0"):
        load_holder(holder)
    (holder / "splits.json").write_text("{not json")
    with pytest.raises(DataError, match="differs from the checksum"):
        load_holder(holder)
    with pytest.raises(DataError, match=r"manifest\.json"):
        load_holder(tmp_path / "party-9")
    with pytest.raises(DataError, match="is not a tree-label-holder bundle"):
        load_label_holder(tmp_path / "party-3")


def test_bundles_of_another_run_are_refused_and_a_saved_bundle_is_kept(tmp_path: Path) -> None:
    # Prepare
    run, _ = trained()
    save_all(run, tmp_path)
    first = (tmp_path / "party-2" / "splits.json").read_text()
    passive = run.passives[2]
    write_holder(
        tmp_path / "party-2",
        RunConfig(),
        "run-b",
        party=2,
        splits=passive.splits,
        width=len(passive.bins),
        preprocessing=TABLE,
    )

    # Execute
    with pytest.raises(ConfigError) as error:
        model_of(tmp_path)

    # Assert: refused, and the replaced bundle was kept whole beside the new one
    assert "come from different runs" in str(error.value)
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("party-2.replaced-")]
    assert len(kept) == 1 and (kept[0] / "splits.json").read_text() == first
