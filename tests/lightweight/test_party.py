"""LVFL inside the protocol: parties prune at scheduled rounds, sparsify uploads, record compute."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from tests.conftest import make_vertical_data
from vfl.config import RunConfig, load_config
from vfl.data.vertical import VerticalData
from vfl.errors import ConfigError
from vfl.prune import unit_widths
from vfl.results.files import RunDirectory
from vfl.run.compose import build_session
from vfl.run.fit import fit
from vfl.run.session import LocalParties, Session
from vfl.wire import SPLIT_TRAIN, EmbedRequest

BASE = [
    "model.bottom.hidden=[16, 12]",
    "model.bottom.embedding_dim=6",
    "model.head.hidden=[8]",
    "train.batch_size=20",
    "train.optimizer.name=sgd",
    "train.optimizer.lr=0.1",
]
ROUNDS_PER_EPOCH = 6  # 120 rows / batch 20


def config(*overrides: str) -> RunConfig:
    return load_config(None, [*BASE, *overrides])


def data() -> VerticalData:
    return make_vertical_data(num_train=120, num_test=30, widths=(5, 7), num_classes=3)


def train(simulation: Session[LocalParties], epochs: int = 1) -> None:
    for epoch in range(epochs):
        simulation.trainer.train_epoch(epoch)


def hidden_widths(simulation: Session[LocalParties]) -> list[list[int]]:
    return [list(unit_widths(p.model).values()) for p in simulation.parties]


def test_parties_prune_at_the_scheduled_round_and_never_regrow() -> None:
    # Prepare: alpha 0.5 from round 3, back to 0.25 from round 8 (must not regrow)
    simulation = build_session(
        config(
            "lightweight.alpha.kind=steps",
            "lightweight.alpha.steps=[[0, 0.0], [3, 0.5], [8, 0.25]]",
        ),
        data(),
    )

    # Execute
    train(simulation, epochs=2)

    # Assert
    assert hidden_widths(simulation) == [[8, 6], [8, 6]]
    for party in simulation.parties:
        log = party.options.lightweight.log  # type: ignore[union-attr]
        assert [e.alpha for e in log] == [0.0] * 3 + [0.5] * 9
        params = [e.params for e in log]
        assert params[0] > params[3] and params[3] == params[-1]
        assert log[3].flops_per_sample < 0.6 * log[0].flops_per_sample
        out = party.model(party.features[SPLIT_TRAIN][:4])
        assert out.shape == (4, 6)


def test_per_party_schedules_differ() -> None:
    # Prepare
    simulation = build_session(
        config(
            "lightweight.alpha.value=0.5",
            "lightweight.party=[{party = 2, alpha = {value = 0.0}}]",
        ),
        data(),
    )

    # Execute
    train(simulation)

    # Assert
    assert hidden_widths(simulation) == [[8, 6], [16, 12]]


def test_pruning_at_round_zero_keeps_training_converging() -> None:
    # Prepare
    simulation = build_session(config("lightweight.alpha.value=0.5"), data())
    before = simulation.trainer.evaluate(SPLIT_TRAIN)["loss"]

    # Execute
    train(simulation, epochs=5)

    # Assert
    assert simulation.trainer.evaluate(SPLIT_TRAIN)["loss"] < before


def test_sparsified_uploads_keep_exactly_the_configured_fraction() -> None:
    # Prepare
    dense = build_session(config(), data())
    sparse = build_session(config("lightweight.beta.value=0.5"), data())

    # Execute
    train(dense)
    train(sparse)

    # Assert: 20 x 6 floats per upload; half of them travel with a 120-bit map
    ledger = sparse.ledger
    assert ledger.messages(kind="CompressedEmbedReply") == 2 * ROUNDS_PER_EPOCH
    up_dense = dense.ledger.total(phase="train", direction="up")
    up_sparse = ledger.total(phase="train", direction="up")
    saved_per_message = (up_dense - up_sparse) / (2 * ROUNDS_PER_EPOCH)
    assert saved_per_message >= 4 * 60 - 5 - 15 - 8  # values dropped, minus header, map, framing


def test_sparsification_combines_with_a_quantizer_and_shared_labels() -> None:
    # Prepare
    simulation = build_session(
        config(
            "protocol.labels=shared",
            "protocol.local_steps=2",
            "compress.embedding.name=scalar",
            "compress.embedding.bits=4",
            "lightweight.beta.value=0.6",
        ),
        data(),
    )
    before = simulation.trainer.evaluate(SPLIT_TRAIN)["loss"]

    # Execute
    train(simulation, epochs=4)

    # Assert
    assert simulation.trainer.evaluate(SPLIT_TRAIN)["loss"] < before


def test_compute_is_recorded_per_round_and_totalled(tmp_path: Path) -> None:
    # Prepare
    simulation = build_session(config("lightweight.alpha.value=0.5"), data())

    # Execute
    records = fit(simulation, epochs=1, run=RunDirectory(tmp_path), progress=False)

    # Assert
    logs = simulation.compute_logs()
    assert sorted(logs) == [1, 2] and all(len(log) == ROUNDS_PER_EPOCH for log in logs.values())
    expected = sum(3 * 1 * 20 * e.flops_per_sample for log in logs.values() for e in log)
    assert records[-1]["bottom_flops"] == expected
    assert all(e.compute_seconds > 0 for log in logs.values() for e in log)


def test_resume_restores_the_pruned_model_and_its_optimizer(tmp_path: Path) -> None:
    # Prepare
    settings = config(
        "lightweight.alpha.kind=steps",
        "lightweight.alpha.steps=[[0, 0.0], [2, 0.5]]",
        "train.optimizer.name=adam",
        "train.optimizer.lr=0.01",
    )
    straight = build_session(settings, data())
    train(straight, epochs=2)
    first = build_session(settings, data())
    train(first, epochs=1)
    state = first.state_dict()

    # Execute
    resumed = build_session(settings, data())
    resumed.load_state_dict(state)
    resumed.trainer.train_epoch(1)

    # Assert
    assert hidden_widths(resumed) == [[8, 6], [8, 6]]
    for a, b in zip(straight.parties, resumed.parties, strict=True):
        for x, y in zip(a.model.parameters(), b.model.parameters(), strict=True):
            assert torch.allclose(x, y, atol=1e-6)
        assert len(b.options.lightweight.log) == 2 * ROUNDS_PER_EPOCH  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (["lightweight.beta.value=0.5", "compress.embedding.name=topk"], "instead of 'topk'"),
        (["lightweight.alpha.value=1.0"], r"\[0, 1\)"),
        (["lightweight.party=[{party = 9}]"], "valid: 1..4"),
        (["lightweight.party=[{party = 1}, {party = 1}]"], "twice"),
        (["lightweight.alpha.kind=steps"], "needs"),
        (["lightweight.alpha.kind=ramp"], "must be one of"),
    ],
)
def test_bad_lightweight_config_is_a_clear_error(overrides: list[str], match: str) -> None:
    # Execute / Assert
    with pytest.raises(ConfigError, match=match):
        load_config(None, ["partition.num_parties=4", *overrides])


def test_flops_fall_by_half_or_more_at_alpha_half_for_an_mlp() -> None:
    # Prepare
    simulation = build_session(config("lightweight.alpha.value=0.5"), data())

    # Execute
    train(simulation)

    # Assert
    party = simulation.parties[0]
    log = party.options.lightweight.log  # type: ignore[union-attr]

    def linear(n_in: int, n_out: int) -> int:  # multiply-adds count 2, plus the bias adds
        return 2 * n_in * n_out + n_out

    unpruned = linear(5, 16) + linear(16, 12) + linear(12, 6)
    assert log[0].flops_per_sample == linear(5, 8) + linear(8, 6) + linear(6, 6)
    assert log[0].flops_per_sample <= math.ceil(0.5 * unpruned)


@pytest.mark.parametrize(
    ("prune_at", "pruned_by_upload"), [("round_start", True), ("after_upload", False)]
)
def test_prune_at_chooses_whether_the_upload_comes_from_the_pruned_model(
    prune_at: str, pruned_by_upload: bool
) -> None:
    # Prepare
    simulation = build_session(
        config(
            "protocol.labels=shared",
            "lightweight.alpha.value=0.5",
            f"lightweight.prune_at={prune_at}",
        ),
        data(),
    )
    party = simulation.parties[0]

    # Execute
    party.handle(EmbedRequest(round=0, ids=torch.arange(20)))

    # Assert
    assert (list(unit_widths(party.model).values()) == [8, 6]) is pruned_by_upload


def test_shared_labels_count_the_extra_forward_of_every_local_step() -> None:
    # Prepare
    simulation = build_session(config("protocol.labels=shared", "protocol.local_steps=3"), data())

    # Execute
    train(simulation)

    # Assert: the upload's forward, then 3 steps of forward + backward
    entry = simulation.parties[0].options.lightweight.log[0]  # type: ignore[union-attr]
    assert entry.train_flops == (1 + 3 + 2 * 3) * 20 * entry.flops_per_sample


def test_after_upload_needs_shared_labels() -> None:
    # Execute / Assert
    with pytest.raises(ConfigError, match="after_upload"):
        load_config(None, ["lightweight.prune_at=after_upload"])
