"""C-VFL (Algorithms 1 and 2) and local iterations, built from config like every run."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.conftest import make_vertical_data
from vfl.config import RunConfig, load_config
from vfl.data.vertical import VerticalData
from vfl.run.compose import build_session
from vfl.run.session import LocalParties, Session
from vfl.wire import CompressedEmbedReply, EmbedRequest, ViewBroadcast, encode

BASE = [
    "model.bottom.hidden=[8]",
    "model.bottom.embedding_dim=4",
    "model.head.hidden=[6]",
    "train.batch_size=32",
    "train.optimizer.name=sgd",
    "train.optimizer.lr=0.1",
]


def config(*overrides: str) -> RunConfig:
    return load_config(None, [*BASE, *overrides])


def data() -> VerticalData:
    return make_vertical_data(num_train=160, num_test=40, widths=(3, 5, 2), num_classes=3)


def parameters(simulation: Session[LocalParties]) -> list[torch.Tensor]:
    modules: list[nn.Module] = [p.model for p in simulation.parties]
    modules.append(simulation.trainer.server.head)  # type: ignore[attr-defined]
    return [p.detach().clone() for m in modules for p in m.parameters()]


def train(*overrides: str, epochs: int = 1) -> Session[LocalParties]:
    simulation = build_session(config(*overrides), data())
    for epoch in range(epochs):
        simulation.trainer.train_epoch(epoch)
    return simulation


def max_gap(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return max((x - y).abs().max().item() for x, y in zip(a, b, strict=True))


def test_algorithm_2_with_identity_compressors_reproduces_the_baseline() -> None:
    # Execute
    baseline = train(epochs=2)
    identity = train(
        "compress.embedding.name=identity", "compress.gradient.name=identity", epochs=2
    )

    # Assert
    assert max_gap(parameters(baseline), parameters(identity)) <= 1e-6
    assert identity.ledger.messages(kind="CompressedEmbedReply") > 0


def test_algorithm_1_with_identity_and_q1_matches_algorithm_2() -> None:
    # Execute: shared labels (parties descend their own loss through a server-model copy) vs
    # private labels (the server returns d loss / d H); the same SGD steps from the same point
    shared = train("protocol.labels=shared", epochs=2)
    private = train(epochs=2)

    # Assert
    assert max_gap(parameters(shared), parameters(private)) <= 1e-5


def test_local_steps_take_q_optimizer_steps_per_round_everywhere() -> None:
    # Prepare
    q = 3
    for labels in ("private", "shared"):
        # Execute
        simulation = train(
            f"protocol.labels={labels}",
            f"protocol.local_steps={q}",
            "train.optimizer.name=adam",
            "train.optimizer.lr=0.01",
        )

        # Assert: Adam counts its steps per parameter
        rounds = simulation.trainer.rounds
        for optimizer in [p.optimizer for p in simulation.parties] + [
            simulation.trainer.server.optimizer  # type: ignore[attr-defined]
        ]:
            state = next(iter(optimizer.state.values()))
            assert int(state["step"]) == q * rounds, labels


def test_shared_labels_round_bytes_are_the_uploads_plus_the_broadcasts() -> None:
    # Prepare
    simulation = train("protocol.labels=shared", "train.shuffle=false")
    batch, width, parties = 32, 4, 3
    payload = bytes(batch * width * 4)  # identity: float32 values
    server_params = sum(p.numel() for p in simulation.trainer.server.head.parameters())  # type: ignore[attr-defined]

    # Execute
    per_round = simulation.ledger.bytes_by_round()[0]

    # Assert
    up = len(encode(CompressedEmbedReply(round=0, payload=payload), sender=1)) + 10  # + Ack
    broadcast = ViewBroadcast(
        round=0, embeddings=(payload,) * parties, server_model=bytes(server_params * 4)
    )
    down = len(encode(EmbedRequest(round=0, ids=torch.arange(batch)), sender=0)) + len(
        encode(broadcast, sender=0)
    )
    assert per_round == {"up": parties * up, "down": parties * down}


def test_lattice_quantization_cuts_upload_bytes_about_sixteenfold() -> None:
    # Execute
    plain = train("protocol.labels=shared")
    lattice = train(
        "protocol.labels=shared", "compress.embedding.name=lattice", "compress.embedding.bits=2"
    )

    # Assert: 2 bits instead of 32 per component, plus an 8-byte range header per message
    ratio = plain.ledger.total(kind="CompressedEmbedReply") / lattice.ledger.total(
        kind="CompressedEmbedReply"
    )
    assert 9 < ratio < 16


def test_compressed_training_still_learns() -> None:
    # Execute
    simulation = train(
        "protocol.labels=shared",
        "protocol.local_steps=2",
        "compress.embedding.name=lattice",
        "compress.embedding.bits=2",
        "train.optimizer.name=adam",
        "train.optimizer.lr=0.02",
        epochs=15,
    )

    # Assert
    metrics = simulation.trainer.evaluate(1)
    assert metrics["accuracy"] > 0.6  # 3 balanced-ish classes: chance is about 0.33


def test_a_strong_proximal_term_keeps_parties_near_the_round_start() -> None:
    # Prepare
    start = parameters(build_session(config(), data()))

    # Execute
    free = train("protocol.local_steps=10")
    anchored = train("protocol.local_steps=10", "protocol.proximal_mu=5")

    # Assert
    assert max_gap(parameters(anchored), start) < max_gap(parameters(free), start)


def test_gradient_compression_is_private_labels_only() -> None:
    message = r"compress\.gradient applies to protocol\.labels = 'private'"
    with pytest.raises(Exception, match=message):
        train("protocol.labels=shared", "compress.gradient.name=scalar")


def test_the_python_api_runs_c_vfl_with_user_modules() -> None:
    # Prepare: the user's own modules plus protocol options from a config
    from tests.conftest import make_models
    from vfl.run.api import simulate

    vertical = data()
    bottoms, head = make_models(vertical)
    options = load_config(
        None,
        [
            "protocol.labels=shared",
            "protocol.local_steps=3",
            "compress.embedding.name=scalar",
            "compress.embedding.bits=4",
        ],
    )

    # Execute
    simulation = simulate(
        vertical,
        bottoms=bottoms,
        head=head,
        config=options,
        optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
        batch_size=32,
    )
    simulation.trainer.train_epoch(0)

    # Assert
    ledger = simulation.ledger
    assert ledger.messages(kind="ViewBroadcast") == 3 * simulation.trainer.rounds
    assert ledger.total(kind="CompressedEmbedReply") < 32 * 4 * 4 * 3 * simulation.trainer.rounds
