"""SecureBoost bundles: each holder's own part, saved and loaded exactly, corrupt ones refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.boost.helpers import TEST_KEY_BITS, vertical_table
from vfl.boost import BoostParams, train_secureboost
from vfl.boost.driver import SecureBoostRun
from vfl.boost.holder_bundle import (
    FILE,
    HOLDER,
    LABEL_HOLDER,
    holder_bundle,
    label_holder_bundle,
    load_bundle,
    predict_from_bundles,
)
from vfl.errors import DataError

PARAMS = BoostParams(num_trees=3, max_depth=3, learning_rate=0.3, max_bin=8)


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


def save_all(run: SecureBoostRun, folder: Path) -> None:
    label_holder_bundle(run.active, list(run.passives), fingerprint="run-a").save(folder / "0")
    for party, passive in run.passives.items():
        holder_bundle(passive, fingerprint="run-a").save(folder / str(party))


def test_bundles_predict_exactly_what_the_trained_model_does(tmp_path: Path) -> None:
    # Prepare
    run, new = trained()
    save_all(run, tmp_path)

    # Execute
    label_holder = load_bundle(tmp_path / "0", role=LABEL_HOLDER)
    holders = {p: (load_bundle(tmp_path / str(p), role=HOLDER), new[p]) for p in (2, 3)}
    margins = predict_from_bundles(label_holder, holders, new[1])

    # Assert: bit for bit, and nothing of a holder's rules in the label holder's file
    expected = run.active.objective.output(margins)
    assert np.array_equal(expected, run.predict("new", new))
    assert len(set(np.round(margins, 9))) > 2  # not a constant model
    for folder, own in [
        ("0", run.active.splits),
        *[(str(p), h.splits) for p, h in run.passives.items()],
    ]:
        saved = json.loads((tmp_path / folder / FILE).read_text())
        assert [tuple(rule) for rule in saved["splits"]] == [
            (r.column, r.bin, r.threshold, r.missing_left) for r in own.rules
        ]  # each file holds its holder's own rules, and only those
    assert all(h.splits.rules for h in run.passives.values())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("trees"), "field 'trees' must be list"),
        (lambda d: d["trees"][0][0].__setitem__(3, 99), "tree 0 node 0 has children outside"),
        (lambda d: d["trees"][0][0].__setitem__(1, 7), "split by party 7, which is not one"),
        (lambda d: d.__setitem__("objective", "rank:pairwise"), "rank:pairwise"),
        (lambda d: d.__setitem__("role", HOLDER), "is a 'holder' bundle"),
    ],
)
def test_a_corrupt_label_holder_bundle_is_one_clear_line(
    tmp_path: Path, change: object, message: str
) -> None:
    # Prepare
    run, _ = trained()
    save_all(run, tmp_path)
    path = tmp_path / "0" / FILE
    data = json.loads(path.read_text())
    change(data)  # type: ignore[operator]
    path.write_text(json.dumps(data))

    # Execute / Assert
    with pytest.raises(DataError, match=message):
        load_bundle(tmp_path / "0", role=LABEL_HOLDER)


def test_a_holder_rule_out_of_range_and_unreadable_json_are_refused(tmp_path: Path) -> None:
    # Prepare
    run, _ = trained()
    save_all(run, tmp_path)
    path = tmp_path / "2" / FILE
    data = json.loads(path.read_text())
    data["splits"][0][0] = data["columns"]
    path.write_text(json.dumps(data))

    # Execute / Assert
    with pytest.raises(DataError, match="split record 0 must be"):
        load_bundle(tmp_path / "2", role=HOLDER)
    path.write_text("{not json")
    with pytest.raises(DataError, match="is not a readable SecureBoost bundle"):
        load_bundle(tmp_path / "2", role=HOLDER)
    with pytest.raises(DataError, match="does not exist"):
        load_bundle(tmp_path / "9", role=HOLDER)


def test_bundles_of_another_run_are_refused_and_a_saved_bundle_is_kept(tmp_path: Path) -> None:
    # Prepare
    run, new = trained()
    save_all(run, tmp_path)
    first = (tmp_path / "2" / FILE).read_text()
    holder_bundle(run.passives[2], fingerprint="run-b").save(tmp_path / "2")

    # Execute
    label_holder = load_bundle(tmp_path / "0", role=LABEL_HOLDER)
    holders = {p: (load_bundle(tmp_path / str(p), role=HOLDER), new[p]) for p in (2, 3)}

    # Assert
    with pytest.raises(DataError, match="party 2's SecureBoost bundle comes from another run"):
        predict_from_bundles(label_holder, holders, new[1])
    kept = [p for p in (tmp_path / "2").iterdir() if p.name != FILE]
    assert [p.read_text() for p in kept] == [first]
