"""Parties that count their own PBM releases: one per row and epoch, none of exact training rows."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.protocol.test_pbm import build
from vfl.errors import PrivacyBudgetExhausted, ProtocolError
from vfl.privacy.budget import EpochBudget
from vfl.privacy.releases import ReleaseGuard
from vfl.privacy.secure_sum import PartySecureSum
from vfl.run.session import LocalParties, Session
from vfl.wire import SPLIT_TEST, SPLIT_TRAIN, EmbedRequest, GradRequest, RefreshRequest


def guarded(simulation: Session[LocalParties], max_epsilon: float = 0.0) -> list[ReleaseGuard]:
    """Give every party a guard (as a deployed party has), in party order."""
    guards = []
    for party in simulation.parties:
        privacy = party.options.privacy
        assert isinstance(privacy, PartySecureSum)
        rows = len(party.features[SPLIT_TRAIN])
        privacy.guard = ReleaseGuard(np.zeros(rows, dtype=np.int64), max_epsilon=max_epsilon)
        guards.append(privacy.guard)
    return guards


def test_a_shuffled_epoch_releases_every_training_row_once_at_every_party() -> None:
    # Prepare
    simulation = build()
    guards = guarded(simulation)
    simulation.trainer.setup()

    # Execute
    simulation.trainer.train_epoch(0)
    simulation.trainer.train_epoch(1)

    # Assert
    assert all(g.uses.tolist() == [2] * len(g.uses) for g in guards)
    event = simulation.trainer.options.privacy.event  # type: ignore[attr-defined]
    assert all(g.events == {event} for g in guards)  # the party counts as the server does
    assert guards[0].epsilon() == EpochBudget(event, 1e-5).epsilon(2)


def test_a_guarded_party_refuses_to_evaluate_training_rows_exactly() -> None:
    # Prepare
    simulation = build()
    guarded(simulation)
    simulation.trainer.setup()

    # Execute / Assert
    with pytest.raises(ProtocolError, match="refuses to evaluate training rows"):
        simulation.trainer.evaluate(SPLIT_TRAIN)
    assert "accuracy" in simulation.trainer.evaluate(SPLIT_TEST)  # the control


def test_a_party_stops_the_run_when_its_budget_is_spent() -> None:
    # Prepare: the parties' budget fits one release of each row, the run trains two epochs
    simulation = build()
    event = simulation.trainer.options.privacy.event  # type: ignore[attr-defined]
    budget = EpochBudget(event, 1e-5)
    guards = guarded(simulation, max_epsilon=(budget.epsilon(1) + budget.epsilon(2)) / 2)
    simulation.trainer.setup()
    simulation.trainer.train_epoch(0)

    # Execute / Assert
    with pytest.raises(ProtocolError) as caught:
        simulation.trainer.train_epoch(1)
    assert isinstance(caught.value.__cause__, PrivacyBudgetExhausted)
    assert "beyond this party's max_epsilon" in str(caught.value)
    assert all(g.most_uses == 1 for g in guards)


def test_counts_sent_in_the_clear_are_counted_on_the_partys_own_noise_alone() -> None:
    # Prepare
    simulation = build("privacy.secure_aggregation=off")
    guards = guarded(simulation)
    simulation.trainer.setup()

    # Execute
    simulation.trainer.train_epoch(0)

    # Assert
    assert all({e.parties for e in g.events} == {1} for g in guards)
    assert simulation.trainer.options.privacy.event.parties == 1  # type: ignore[attr-defined]


def test_a_party_with_pbm_refuses_to_refresh_an_exact_training_embedding() -> None:
    # Prepare: an open round's update done, as before a C-VFL refresh
    simulation = build()
    simulation.trainer.setup()
    simulation.trainer.train_epoch(0)
    party = simulation.parties[0]
    ids = torch.arange(4)
    party.handle(EmbedRequest(round=10_000, ids=ids))
    party.handle(GradRequest(round=10_000, grad=torch.zeros(4, 4)))

    # Execute / Assert
    with pytest.raises(ProtocolError, match="party 1 refuses a refresh"):
        party.handle(RefreshRequest(round=10_000))
