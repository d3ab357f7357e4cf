"""FedBCD's party K: the active party's local steps are exact block-coordinate steps.

The label holder holds one party's features (``protocol.active_party``); that party's block is
its bottom and the head, and its Q local steps descend the real loss at ``[stale embeddings of the
others, its current block]`` (Liu et al., Algorithm 2; spec fedbcd-lvfl.md sections 1.1, 1.4).
"""

from __future__ import annotations

import copy

import pytest
import torch

from tests.conftest import make_vertical_data
from vfl.config import load_config
from vfl.protocol.loop import ServerLoop
from vfl.run.compose import build_session
from vfl.run.session import LocalParties, Session

LINEAR = [
    "model.bottom.hidden=[]",
    "model.bottom.embedding_dim=2",
    "train.optimizer.name=sgd",
    "train.optimizer.lr=0.1",
    "train.optimizer.fused=false",
    "train.batch_size=32",
    "train.shuffle=false",
]


def session(*overrides: str) -> Session[LocalParties]:
    data = make_vertical_data(num_train=32, num_test=8, widths=(3, 4, 2))
    return build_session(load_config(None, [*LINEAR, *overrides]), data)


def loop_of(run: Session[LocalParties]) -> ServerLoop:
    assert isinstance(run.trainer, ServerLoop)
    return run.trainer


@pytest.mark.parametrize("active", [1, 3])
def test_the_active_partys_q_steps_are_central_block_coordinate_steps(active: int) -> None:
    # Prepare: one round on the whole batch, Q = 3, party `active` sits with the labels
    run = session(f"protocol.active_party={active}", "protocol.local_steps=3")
    loop = loop_of(run)
    ids = torch.arange(32)
    party = run.parties[active - 1]
    inputs = {p.party_id: p.features[0][ids] for p in run.parties}
    with torch.no_grad():
        stale = {p.party_id: p.model(inputs[p.party_id]) for p in run.parties}
    bottom, head = copy.deepcopy(party.model), copy.deepcopy(loop.server.head)
    labels = loop.server.labels[0][ids]

    # Execute: the protocol's round, and the same block steps computed centrally
    loop.train_round(ids)
    optimizer = torch.optim.SGD([*bottom.parameters(), *head.parameters()], lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        own = bottom(inputs[active])
        fused = [own if p == active else stale[p] for p in sorted(stale)]
        torch.autograd.backward(loop.server.task.loss(head(fused), labels))
        optimizer.step()

    # Assert
    for got, want in zip(
        [*party.model.parameters(), *loop.server.head.parameters()],
        [*bottom.parameters(), *head.parameters()],
        strict=True,
    ):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=0)


def test_an_active_party_no_longer_trains_like_a_passive_one() -> None:
    # Prepare: the same run with and without party 3 sitting with the labels
    with_active = session("protocol.active_party=3", "protocol.local_steps=5")
    without = session("protocol.local_steps=5")

    # Execute
    for run in (with_active, without):
        for epoch in range(3):
            run.trainer.train_epoch(epoch)

    # Assert: the active block's exact steps change the trajectory
    gap = max(
        float((a - b).abs().max().detach())
        for a, b in zip(
            with_active.parties[2].model.parameters(),
            without.parties[2].model.parameters(),
            strict=True,
        )
    )
    assert gap > 1e-4


def test_with_one_local_step_the_active_party_changes_nothing() -> None:
    # Negative control: at Q = 1 the exact step is the sync-point step: identical trajectories
    with_active = session("protocol.active_party=3")
    without = session()
    for run in (with_active, without):
        run.trainer.train_epoch(0)
    for a, b in zip(
        with_active.parties[2].model.parameters(),
        without.parties[2].model.parameters(),
        strict=True,
    ):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


def test_the_sequential_schedule_gives_the_active_block_the_last_turn() -> None:
    # Prepare
    run = session(
        "protocol.active_party=2", "protocol.schedule=sequential", "protocol.local_steps=3"
    )

    # Execute
    loss = run.trainer.train_epoch(0)

    # Assert: the passive parties refresh, the active party never crosses the wire
    assert loss == loss  # finite
    assert run.ledger.messages(kind="RefreshRequest") == 2
    assert {row.party for row, _ in run.ledger.rows()} == {1, 3}
