"""The reply rules both transports apply: requests declare replies, replies check their sizes."""

from __future__ import annotations

import pytest
import torch

from vfl.deploy.messages import (
    CheckpointRequest,
    ControlAck,
    PsiBlindRequest,
    PsiPointsReply,
    PsiStartRequest,
    SetupReply,
)
from vfl.errors import WireError
from vfl.transport import InProcTransport, PartyEndpoint
from vfl.wire import (
    Ack,
    CompressedEmbedReply,
    EmbedReply,
    EmbedRequest,
    EvalRequest,
    GradRequest,
    Message,
    RefreshRequest,
)
from vfl.wire.messages import PublicKeyAnnounce, SecAggSetup

EMBED = EmbedRequest(round=3, ids=torch.arange(4))
SECAGG = SecAggSetup(
    round=0,
    run_id=b"r" * 16,
    party_ids=torch.tensor([1, 2]),
    max_count=4,
    bits=8,
    eval_fraction_bits=0,
)


@pytest.mark.parametrize(
    ("request_", "reply"),
    [
        (EMBED, EmbedReply(round=3, embedding=torch.zeros(4, 2))),
        (EMBED, CompressedEmbedReply(round=3, payload=b"\x01\x02")),
        (
            EvalRequest(round=3, ids=torch.arange(2), split=1),
            EmbedReply(round=3, embedding=torch.ones(2, 5)),
        ),
        (RefreshRequest(round=3), EmbedReply(round=3, embedding=torch.zeros(7, 2))),
        (GradRequest(round=3, grad=torch.zeros(4, 2)), Ack(round=3)),
        (SECAGG, PublicKeyAnnounce(round=0, public_key=b"k" * 32)),
        (PsiStartRequest(round=0, split=0), PsiPointsReply(round=0, points=b"p" * 64)),
        (
            PsiBlindRequest(round=0, split=0, points=b"q" * 96),
            PsiPointsReply(round=0, points=b"p" * 96),
        ),
        (CheckpointRequest(round=9), ControlAck(round=9)),
    ],
)
def test_valid_replies_pass(request_: Message, reply: Message) -> None:
    request_.check_reply(reply)


@pytest.mark.parametrize(
    ("request_", "reply", "reason"),
    [
        (EMBED, Ack(round=3), "Ack is not a valid reply to EmbedRequest"),
        (EMBED, EmbedReply(round=3, embedding=torch.zeros(5, 2)), "5 rows answers a request for 4"),
        (EMBED, EmbedReply(round=3, embedding=torch.zeros(4)), "2-D floating point"),
        (EMBED, EmbedReply(round=3, embedding=torch.zeros(4, 2, dtype=torch.int64)), "floating"),
        (
            EMBED,
            EmbedReply(round=3, embedding=torch.tensor([[0.0], [torch.inf], [0.0], [0.0]])),
            "non-finite",
        ),
        (
            GradRequest(round=3, grad=torch.zeros(4, 2)),
            EmbedReply(round=3, embedding=torch.zeros(4, 2)),
            "not a valid reply to GradRequest",
        ),
        (SECAGG, PublicKeyAnnounce(round=0, public_key=b"k" * 31), "must be 32 bytes, got 31"),
        (
            PsiStartRequest(round=0, split=0),
            PsiPointsReply(round=0, points=b"p" * 33),
            "whole number",
        ),
        (
            PsiBlindRequest(round=0, split=0, points=b"q" * 96),
            PsiPointsReply(round=0, points=b"p" * 64),
            "has 2 elements; it was sent 3",
        ),
        (
            CheckpointRequest(round=9),
            SetupReply(round=9, width=1, num_train=1, num_test=1),
            "not a valid reply",
        ),
    ],
)
def test_invalid_replies_are_rejected_with_the_reason(
    request_: Message, reply: Message, reason: str
) -> None:
    with pytest.raises(WireError, match=reason):
        request_.check_reply(reply)


def test_a_message_declaring_no_replies_gets_the_replys_own_checks_only() -> None:
    # Prepare: a message type that declares no replies
    class Unknown(Message):
        pass

    # Execute / Assert
    assert Unknown.REPLIES == ()
    Unknown(round=0).check_reply(Ack(round=0))
    with pytest.raises(WireError, match="non-finite"):
        Unknown(round=0).check_reply(EmbedReply(round=0, embedding=torch.full((1, 1), torch.nan)))


def test_the_in_process_transport_rejects_a_bad_reply_by_the_same_rule() -> None:
    # Prepare: a party that answers an embedding request with an Ack
    transport = InProcTransport({1: PartyEndpoint(1, lambda message: Ack(round=message.round))})

    # Execute
    exchange = transport.request({1: EMBED})

    # Assert
    assert not exchange.replies
    assert isinstance(exchange.failures[1], WireError)
    assert "Ack is not a valid reply to EmbedRequest" in str(exchange.failures[1])
