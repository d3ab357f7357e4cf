"""Compressed evaluation traffic (``compress.evaluation``) and the unbounded-quantizer warning."""

from __future__ import annotations

import pytest

from tests.conftest import make_vertical_data
from vfl.config import load_config
from vfl.errors import ConfigError
from vfl.run.compose import Blueprint, build_session

LATTICE = ["compress.embedding.name=lattice", "compress.embedding.bits=2"]


def evaluation_bytes(*overrides: str, deployed: bool = False) -> tuple[int, dict[str, float]]:
    data = make_vertical_data(num_train=64, num_test=300)
    config = load_config(None, ["train.eval_batch_size=128", *overrides])
    session = build_session(Blueprint.from_config(config, deployed=deployed), data)
    metrics = session.trainer.evaluate(1)
    return session.ledger.total(phase="eval", direction="up"), metrics


def test_compressed_evaluation_sends_the_compressed_payloads() -> None:
    # Execute
    plain, _ = evaluation_bytes(*LATTICE, "compress.evaluation=off")
    compressed, metrics = evaluation_bytes(*LATTICE, "compress.evaluation=on")

    # Assert: 2 bits instead of 32 per component (plus headers), and the metrics still computed
    assert compressed < plain / 8
    assert 0.0 <= metrics["accuracy"] <= 1.0


def test_auto_compresses_evaluation_in_a_deployment_only() -> None:
    # Execute
    simulated, _ = evaluation_bytes(*LATTICE)
    deployed, _ = evaluation_bytes(*LATTICE, deployed=True)
    forced_on, _ = evaluation_bytes(*LATTICE, "compress.evaluation=on")

    # Assert
    assert deployed == forced_on < simulated


def test_evaluation_without_a_compressor_is_unchanged_by_the_setting() -> None:
    # Negative control: nothing to compress, so a deployment's 'auto' (on) sends the same bytes
    assert evaluation_bytes(deployed=True)[0] == evaluation_bytes()[0]
    # and asking for it explicitly is refused: it would not apply
    with pytest.raises(ConfigError, match=r"compress\.evaluation: 'on' does not apply"):
        load_config(None, ["compress.evaluation=on"])


def test_a_quantizer_on_unbounded_embeddings_warns_with_the_fix() -> None:
    # Prepare
    config = load_config(None, LATTICE)

    # Execute / Assert
    with pytest.warns(UserWarning, match="output_activation = 'tanh'"):
        Blueprint.from_config(config).warn_of_risks()


def test_a_fixed_range_on_bounded_embeddings_does_not_warn(
    recwarn: pytest.WarningsRecorder,
) -> None:
    # Prepare
    bounded = [
        *LATTICE,
        "model.bottom.output_activation=tanh",
        "compress.embedding.range=fixed",
    ]

    # Execute
    Blueprint.from_config(load_config(None, bounded)).warn_of_risks()

    # Assert
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]
