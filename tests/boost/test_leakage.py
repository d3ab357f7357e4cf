"""The instance spaces a passive holder sees let it infer labels (SecureBoost's known leakage)."""

from __future__ import annotations

import numpy as np

from tests.boost.helpers import short_keys, vertical_table
from vfl.boost import BoostParams
from vfl.boost.active import ActiveBooster
from vfl.boost.leakage import InstanceSpaceSpy, deepest_cells, infer_labels
from vfl.boost.link import local_link
from vfl.boost.passive import PassiveBooster
from vfl.results.metrics import roc_auc


def spy_on_training(rows: int, seed: int) -> tuple[np.ndarray, InstanceSpaceSpy]:
    labels, blocks = vertical_table(rows, (1, 2, 2), seed=seed, distinct=10)
    params = BoostParams(num_trees=3, max_depth=3, max_bin=8)
    spy = InstanceSpaceSpy(2, blocks[2], max_bin=8, insecure_test_key=True)
    holders = {2: spy, 3: PassiveBooster(3, blocks[3], max_bin=8, insecure_test_key=True)}
    active = ActiveBooster(1, labels, blocks[1], params, short_keys(), workers=1)
    link = local_link(holders)
    active.connect(link, [2, 3])
    active.fit(link)
    return labels, spy


def test_deepest_cells_take_the_last_row_set_holding_a_row() -> None:
    # Prepare
    spaces = [np.arange(6), np.array([0, 1, 2]), np.array([3, 4])]

    # Execute
    cells = deepest_cells(spaces, 7)

    # Assert: row 5 only in the root, row 6 never seen
    np.testing.assert_array_equal(cells, [1, 1, 1, 2, 2, 0, -1])


def test_a_few_known_labels_and_the_instance_spaces_reveal_the_rest() -> None:
    # Prepare: the spy knows 10% of the labels
    labels, spy = spy_on_training(400, seed=1)
    rng = np.random.default_rng(0)
    known = np.sort(rng.choice(len(labels), 40, replace=False))
    unknown = np.setdiff1d(np.arange(len(labels)), known)

    # Execute
    scores = infer_labels(spy.spaces, len(labels), known, labels[known])
    controls = [
        infer_labels(spy.spaces, len(labels), known, rng.permutation(labels[known]))
        for _ in range(30)
    ]

    # Assert: far above chance; with the known labels shuffled (the control: a few cells make
    # one shuffle's AUC vary widely, so their mean) at chance
    assert sorted(spy.spaces) == [0, 1, 2]
    assert roc_auc(labels[unknown], scores[unknown]) > 0.8
    control = np.mean([roc_auc(labels[unknown], c[unknown]) for c in controls])
    assert abs(control - 0.5) < 0.15
