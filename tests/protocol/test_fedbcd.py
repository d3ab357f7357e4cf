"""FedBCD: parallel and sequential schedules, the active party, privacy of passive parties."""

from __future__ import annotations

import pytest
import torch

from tests.protocol.test_cvfl import BASE, data, max_gap, parameters, train
from vfl.config import load_config
from vfl.run.compose import build_session
from vfl.transport import Handler
from vfl.transport.colocated import ColocatedTransport
from vfl.wire import (
    Ack,
    CompressedGradEmbedRequest,
    CompressedGradRequest,
    EmbedReply,
    EmbedRequest,
    EvalRequest,
    GradRequest,
    Message,
    RefreshRequest,
    Shutdown,
    encode,
)

ACTIVE = "protocol.active_party=3"


def test_fedbcd_p_with_q1_is_fedsgd_on_the_joint_model() -> None:
    # Execute: FedBCD-p (Q=1) with an active party vs the centralized joint model, plain SGD
    fedbcd = train(ACTIVE, "protocol.local_steps=1", epochs=2)
    fedsgd = train("protocol.mode=centralized", epochs=2)

    # Assert
    joint = [p.detach() for p in fedsgd.trainer.model.parameters()]  # type: ignore[attr-defined]
    assert max_gap(parameters(fedbcd), joint) <= 1e-6


def recording(handler: Handler, log: list[Message]) -> Handler:
    def handle(message: Message) -> Message:
        log.append(message)
        return handler(message)

    return handle


def test_passive_parties_never_receive_labels_features_or_other_embeddings() -> None:
    # Prepare: FedBCD-p, Q=5, compressed both ways, party 3 active (with the labels)
    config = load_config(
        None,
        [
            *BASE,
            ACTIVE,
            "protocol.local_steps=5",
            "compress.embedding.name=scalar",
            "compress.embedding.bits=4",
            "compress.gradient.name=scalar",
            "compress.gradient.bits=8",
        ],
    )
    simulation = build_session(config, data())
    transport = simulation.trainer.transport  # type: ignore[attr-defined]
    assert isinstance(transport, ColocatedTransport)
    received: dict[int, list[Message]] = {1: [], 2: []}
    for endpoint in transport.remote._endpoints.values():  # type: ignore[attr-defined]
        endpoint.handler = recording(endpoint.handler, received[endpoint.party_id])

    # Execute
    simulation.trainer.train_epoch(0)
    simulation.trainer.evaluate(1)
    simulation.trainer.close()

    # Assert: ids, its own compressed gradient of its own embedding's shape, nothing else
    for messages in received.values():
        assert {type(m) for m in messages} == {
            EmbedRequest,
            CompressedGradEmbedRequest,  # a round's gradient with the next round's ids
            CompressedGradRequest,
            EvalRequest,
            Shutdown,
        }
        for message in messages:
            if isinstance(message, EmbedRequest | EvalRequest | CompressedGradEmbedRequest):
                assert message.ids.dtype == torch.int64
            if isinstance(message, CompressedGradRequest | CompressedGradEmbedRequest):
                assert len(message.payload) == 8 + 32 * 4  # range header + 8-bit codes (B, P)


def test_per_round_bytes_are_two_exchanges_per_passive_party() -> None:
    # Prepare: K = 3 with party 3 active: 2 passive parties; every gradient on its own
    simulation = train(ACTIVE, "train.shuffle=false", "protocol.pipeline=false")
    batch, width = 32, 4

    # Execute
    first_round = simulation.ledger.bytes_by_round()[0]

    # Assert: per passive party, the embedding exchange and the gradient exchange
    embed = len(encode(EmbedRequest(round=0, ids=torch.arange(batch)), sender=0))
    reply = len(encode(EmbedReply(round=0, embedding=torch.zeros(batch, width)), sender=1))
    grad = len(encode(GradRequest(round=0, grad=torch.zeros(batch, width)), sender=0))
    ack = len(encode(Ack(round=0), sender=1))
    assert first_round == {"up": 2 * (reply + ack), "down": 2 * (embed + grad)}
    assert simulation.ledger.messages(round=0) == 2 * 4
    assert {key.party for key, _ in simulation.ledger.rows()} == {1, 2}


def test_sequential_schedule_refreshes_each_party_after_its_update() -> None:
    # Execute
    sequential = train("protocol.schedule=sequential", "protocol.local_steps=3")
    parallel = train("protocol.local_steps=3")

    # Assert: three exchanges per party per round, and a different trajectory
    ledger = sequential.ledger
    rounds = sequential.trainer.rounds
    assert ledger.messages(kind="RefreshRequest") == 3 * rounds
    assert ledger.messages(kind="EmbedReply", phase="train") == 2 * 3 * rounds
    assert max_gap(parameters(sequential), parameters(parallel)) > 1e-4


def test_inverse_sqrt_learning_rate_follows_the_round() -> None:
    # Execute: 5 rounds
    simulation = train("train.optimizer.lr_schedule=inverse_sqrt")

    # Assert: round 4 ran at lr / sqrt(5)
    for optimizer in [p.optimizer for p in simulation.parties]:
        assert optimizer.param_groups[0]["lr"] == 0.1 / 5**0.5


def test_refresh_out_of_order_is_refused() -> None:
    party = train().parties[0]
    with pytest.raises(Exception, match="before that round's update"):
        party.handle(RefreshRequest(round=99))
