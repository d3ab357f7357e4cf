"""``vfl.export``: a run of your own modules, saved as bundles and loaded into fresh modules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import vfl
from tests.conftest import make_models, make_vertical_data
from vfl.errors import ConfigError, DataError
from vfl.protocol.loop import ServerLoop
from vfl.run.predict import probabilities
from vfl.wire import SPLIT_TEST


def trained() -> tuple[vfl.Session, vfl.VerticalData]:
    data = make_vertical_data(num_train=120, num_test=30, num_classes=3)
    bottoms, head = make_models(data)
    session = vfl.simulate(
        data, bottoms=bottoms, head=head, batch_size=20, optimizer=lambda p: torch.optim.Adam(p)
    )
    vfl.fit(session, epochs=2, progress=False)
    return session, data


def test_an_exported_simulation_predicts_as_the_trained_modules(tmp_path: Path) -> None:
    # Prepare: a trained run of your own modules, and fresh modules of the same architecture
    session, data = trained()
    loop = session.trainer
    assert isinstance(loop, ServerLoop)
    expected = probabilities(loop.server.task, loop.logits(SPLIT_TEST))
    fresh_bottoms, fresh_head = make_models(data, seed=7)

    # Execute
    vfl.export(session, tmp_path, classes=["a", "b", "c"])
    model = vfl.load_model(tmp_path, bottoms=fresh_bottoms, head=fresh_head)
    predictions = model.predict(list(data.test_blocks), labels=data.test_labels)

    # Assert
    np.testing.assert_allclose(predictions.probabilities, expected, rtol=0, atol=1e-6)
    assert model.classes == ("a", "b", "c")
    assert set(predictions.labels) <= {"a", "b", "c"}
    # Control: the fresh modules predict otherwise until the weights are loaded into them
    untrained_bottoms, untrained_head = make_models(data, seed=7)
    untrained = vfl.simulate(
        data,
        bottoms=untrained_bottoms,
        head=untrained_head,
        optimizer=lambda p: torch.optim.Adam(p),
    ).trainer
    assert isinstance(untrained, ServerLoop)
    assert (
        np.abs(probabilities(untrained.server.task, untrained.logits(SPLIT_TEST)) - expected).max()
        > 1e-3
    )


def test_loading_your_own_modules_needs_them_and_exporting_never_replaces(tmp_path: Path) -> None:
    # Prepare
    session, _ = trained()
    vfl.export(session, tmp_path)

    # Execute / Assert
    with pytest.raises(DataError, match=r"vfl.load_model\(RUN_DIR, bottoms="):
        vfl.load_model(tmp_path)
    with pytest.raises(ConfigError, match="already exists"):
        vfl.export(session, tmp_path)
    with pytest.raises(ConfigError, match="3 distinct names"):
        vfl.export(session, tmp_path / "other", classes=["a", "b"])
