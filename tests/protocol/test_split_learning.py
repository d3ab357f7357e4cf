from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.conftest import make_models, make_vertical_data
from vfl.config import RunConfig
from vfl.config.protocols import ProtocolConfig
from vfl.data.vertical import VerticalData
from vfl.errors import DataError, ProtocolError
from vfl.results.files import RunDirectory
from vfl.run.api import simulate
from vfl.run.fit import fit
from vfl.run.session import LocalParties, Session
from vfl.transport import Handler
from vfl.wire import (
    Ack,
    EmbedReply,
    EmbedRequest,
    EvalRequest,
    GradEmbedRequest,
    GradRequest,
    Message,
    Shutdown,
    encode,
)

ADAM = lambda params: torch.optim.Adam(params, lr=1e-2)  # noqa: E731


def test_per_round_bytes_equal_the_encoded_messages() -> None:
    # Prepare: 100 samples, batch 32 -> rounds of 32, 32, 32 and 4 samples; widths 4; every
    # gradient on its own (tests/protocol/test_pipeline.py counts the pipelined messages)
    data = make_vertical_data(num_train=100, widths=(3, 5, 2))
    bottoms, head = make_models(data, embedding_dim=4)
    unpipelined = RunConfig(protocol=ProtocolConfig(pipeline=False))
    sim = simulate(
        data,
        bottoms=bottoms,
        head=head,
        optimizer=ADAM,
        config=unpipelined,
        batch_size=32,
        shuffle=False,
    )

    # Execute
    sim.trainer.train_epoch(0)

    # Assert
    per_round = sim.ledger.bytes_by_round(phase="train")
    assert sorted(per_round) == [0, 1, 2, 3]
    for round_, batch in zip(range(4), (32, 32, 32, 4), strict=True):
        ids = torch.arange(32 * round_, 32 * round_ + batch)  # unshuffled: rows in order
        down = len(encode(EmbedRequest(round=round_, ids=ids), sender=0)) + len(
            encode(GradRequest(round=round_, grad=torch.zeros(batch, 4)), sender=0)
        )
        up = len(encode(EmbedReply(round=round_, embedding=torch.zeros(batch, 4)), sender=1)) + len(
            encode(Ack(round=round_), sender=1)
        )
        assert per_round[round_] == {"up": 3 * up, "down": 3 * down}
        # the embedding itself: B*P*4 payload + 20 bytes of header
        assert sim.ledger.total(round=round_, kind="EmbedReply", party=2) == batch * 16 + 20


def recording(handler: Handler, log: list[Message]) -> Handler:
    def handle(message: Message) -> Message:
        log.append(message)
        return handler(message)

    return handle


def test_parties_receive_only_ids_and_their_own_gradients() -> None:
    # Prepare: record every message each party is handed
    data = make_vertical_data(num_train=64, widths=(3, 5))
    bottoms, head = make_models(data, embedding_dim=4)
    sim = simulate(data, bottoms=bottoms, head=head, optimizer=ADAM, batch_size=16)
    received: dict[int, list[Message]] = {1: [], 2: []}
    transport = sim.trainer.transport  # type: ignore[attr-defined]
    for endpoint in transport._endpoints.values():
        endpoint.handler = recording(endpoint.handler, received[endpoint.party_id])

    # Execute
    fit(sim, epochs=1, progress=False)
    sim.trainer.close()

    # Assert
    for messages in received.values():
        kinds = {type(m) for m in messages}
        assert kinds == {EmbedRequest, GradEmbedRequest, GradRequest, EvalRequest, Shutdown}
        for message in messages:
            if isinstance(message, GradRequest | GradEmbedRequest):
                assert message.grad.shape == (16, 4)  # d loss / d (own embedding) only
            if isinstance(message, EmbedRequest | EvalRequest | GradEmbedRequest):
                assert message.ids.dtype == torch.int64  # row positions, nothing else


def test_mismatched_row_counts_between_parties_are_a_clear_error() -> None:
    # Prepare
    data = make_vertical_data(num_train=50)
    blocks = (data.train_blocks[0], data.train_blocks[1][:49])

    # Execute / Assert
    with pytest.raises(DataError, match="party 2's train block has 49 rows but there are 50"):
        VerticalData(blocks, data.test_blocks, data.train_labels, data.test_labels, data.task)


def test_nan_features_are_a_clear_error() -> None:
    # Prepare
    data = make_vertical_data(num_train=50)
    poisoned = data.train_blocks[1].clone()
    poisoned[7, 2] = float("nan")

    # Execute / Assert
    with pytest.raises(DataError, match=r"party 2's train features .* row 7, position \(2,\)"):
        VerticalData(
            (data.train_blocks[0], poisoned),
            data.test_blocks,
            data.train_labels,
            data.test_labels,
            data.task,
        )


def test_a_party_that_sends_a_wrong_shape_stops_the_round_with_its_name() -> None:
    # Prepare: party 2's model emits 5 columns although the server was told 4
    data = make_vertical_data(num_train=64)
    bottoms, head = make_models(data, embedding_dim=4)
    sim = simulate(data, bottoms=bottoms, head=head, optimizer=ADAM, batch_size=16)
    sim.parties[1].model = torch.nn.Linear(5, 5)

    # Execute / Assert
    with pytest.raises(Exception, match="party 2 sent an embedding of shape"):
        sim.trainer.train_epoch(0)


def test_a_replayed_embed_request_is_refused_by_the_party() -> None:
    # Prepare
    data = make_vertical_data(num_train=64)
    bottoms, head = make_models(data)
    sim = simulate(data, bottoms=bottoms, head=head, optimizer=ADAM, batch_size=16)
    sim.trainer.train_epoch(0)
    party = sim.parties[0]

    # Execute / Assert
    with pytest.raises(Exception, match="stale or replayed"):
        party.handle(EmbedRequest(round=0, ids=torch.arange(4)))
    with pytest.raises(Exception, match=r"ids must lie in \[0, 63\]"):
        party.handle(EmbedRequest(round=99, ids=torch.tensor([64])))
    with pytest.raises(Exception, match="GradRequest for round 5 but none pending"):
        party.handle(GradRequest(round=5, grad=torch.zeros(1, 4)))


def test_party_failure_surfaces_as_protocol_error() -> None:
    # Prepare
    data = make_vertical_data(num_train=64)
    bottoms, head = make_models(data)
    sim = simulate(data, bottoms=bottoms, head=head, optimizer=ADAM, batch_size=16)
    sim.parties[0].features[0] = sim.parties[0].features[0][:10]  # the party lost rows

    # Execute / Assert
    with pytest.raises(ProtocolError, match="party 1"):
        sim.trainer.train_epoch(0)


def test_a_resumed_run_ends_where_an_uninterrupted_run_ends(tmp_path: Path) -> None:
    # Prepare
    data = make_vertical_data(num_train=96)

    def fresh() -> Session[LocalParties]:
        bottoms, head = make_models(data, seed=5)
        return simulate(data, bottoms=bottoms, head=head, optimizer=ADAM, batch_size=16, seed=3)

    straight = fresh()
    fit(straight, epochs=4, progress=False)
    run = RunDirectory(tmp_path / "run")
    fit(fresh(), epochs=2, run=run, progress=False)

    # Execute: a new process would rebuild from config and resume from the checkpoint
    resumed = fresh()
    records = fit(resumed, epochs=4, run=run, progress=False, resume=True)

    # Assert
    assert [r["epoch"] for r in records] == [0, 1, 2, 3, 4]
    assert [r["epoch"] for r in run.read_metrics()] == [0, 1, 2, 3, 4]
    for a, b in zip(
        straight.parties[0].model.parameters(),
        resumed.parties[0].model.parameters(),
        strict=True,
    ):
        assert torch.equal(a, b)
    assert resumed.ledger.total() == straight.ledger.total()


def test_a_diverging_run_stops_with_a_clear_error() -> None:
    # Prepare
    from tests.conftest import make_vertical_data
    from vfl.config import load_config
    from vfl.errors import ProtocolError, TrainingDiverged
    from vfl.run.compose import build_session

    data = make_vertical_data(num_train=64, num_test=16, widths=(3, 4), num_classes=2)
    settings = load_config(None, ["train.optimizer.name=sgd", "train.optimizer.lr=1e30"])
    simulation = build_session(settings, data)

    # Execute / Assert: whichever role's numbers break first names the divergence (a party's
    # non-finite embedding is a rejected reply, which the loop reports as a ProtocolError)
    with pytest.raises((TrainingDiverged, ProtocolError), match="diverged"):
        for epoch in range(5):
            simulation.trainer.train_epoch(epoch)


def test_a_server_model_gone_nan_stops_training_with_training_diverged() -> None:
    # Prepare
    from tests.conftest import make_vertical_data
    from vfl.config import load_config
    from vfl.errors import TrainingDiverged
    from vfl.run.compose import build_session

    data = make_vertical_data(num_train=64, num_test=16, widths=(3, 4), num_classes=2)
    simulation = build_session(load_config(None, []), data)
    with torch.no_grad():
        next(simulation.trainer.server.head.parameters()).fill_(float("nan"))  # type: ignore[attr-defined]

    # Execute / Assert
    with pytest.raises(TrainingDiverged, match="training diverged"):
        simulation.trainer.train_epoch(0)
