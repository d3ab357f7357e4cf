"""A party answers each request by the handler its table names for the message's kind."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from vfl.errors import ProtocolError
from vfl.roles.party import Party
from vfl.wire import Ack, EmbedReply, EmbedRequest, Message, PublicKeyAnnounce, Shutdown


def _party() -> Party:
    model = nn.Linear(3, 2)
    block = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    return Party(
        1,
        train_features=block,
        test_features=block,
        model=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
    )


def test_a_request_goes_to_the_handler_of_its_kind() -> None:
    # Prepare
    party = _party()

    # Execute
    reply = party.handle(EmbedRequest(round=0, ids=torch.tensor([0, 2])))
    closed = party.handle(Shutdown(round=1))

    # Assert
    assert isinstance(reply, EmbedReply)
    assert reply.embedding.shape == (2, 2)
    assert closed == Ack(round=1)


def test_every_kind_in_the_table_is_a_distinct_message_kind() -> None:
    # Prepare
    party = _party()

    # Execute
    kinds = set(party._handlers)

    # Assert: one handler per kind, and every kind a registered message
    assert len(kinds) == 12
    assert all(isinstance(kind, int) and kind > 0 for kind in kinds)


def test_a_message_a_party_does_not_answer_is_refused_by_name() -> None:
    # Prepare: a reply type (the negative control: a party never receives one)
    party = _party()
    message: Message = PublicKeyAnnounce(round=0, public_key=b"\0" * 32)

    # Execute
    with pytest.raises(ProtocolError) as error:
        party.handle(message)

    # Assert
    assert str(error.value) == "party 1 cannot handle PublicKeyAnnounce"
