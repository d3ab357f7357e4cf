"""The contract every transport must meet; add new transports to TRANSPORTS."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest
import torch

from vfl.errors import ProtocolError, WireError
from vfl.transport import InProcTransport, PartyEndpoint, Transport
from vfl.wire import Ack, EmbedReply, EmbedRequest, Message, encode

TransportFactory = Callable[[Mapping[int, PartyEndpoint]], Transport]
TRANSPORTS: dict[str, TransportFactory] = {"inproc": lambda endpoints: InProcTransport(endpoints)}


def echo_handler(party: int) -> Callable[[Message], Message]:
    def handle(message: Message) -> Message:
        assert isinstance(message, EmbedRequest)
        return EmbedReply(round=message.round, embedding=message.ids.float().unsqueeze(1) * party)

    return handle


def endpoints(handlers: Mapping[int, Callable[[Message], Message]]) -> dict[int, PartyEndpoint]:
    return {party: PartyEndpoint(party, handler) for party, handler in handlers.items()}


@pytest.fixture(params=sorted(TRANSPORTS))
def factory(request: pytest.FixtureRequest) -> TransportFactory:
    return TRANSPORTS[request.param]


def test_each_party_gets_its_message_and_answers(factory: TransportFactory) -> None:
    # Prepare
    transport = factory(endpoints({1: echo_handler(1), 2: echo_handler(2)}))
    ids = torch.arange(4)

    # Execute
    exchange = transport.request({p: EmbedRequest(round=0, ids=ids) for p in (1, 2)})

    # Assert
    assert not exchange.failures
    for party in (1, 2):
        reply = exchange.replies[party]
        assert isinstance(reply, EmbedReply)
        assert torch.equal(reply.embedding, ids.float().unsqueeze(1) * party)
    assert transport.party_ids == (1, 2)


def test_ledger_records_the_encoded_size_of_every_message(factory: TransportFactory) -> None:
    # Prepare
    transport = factory(endpoints({1: echo_handler(1), 2: echo_handler(2)}))
    request = EmbedRequest(round=3, ids=torch.arange(5))
    reply = EmbedReply(round=3, embedding=torch.zeros(5, 1))

    # Execute
    transport.request({1: request, 2: request})

    # Assert
    ledger = transport.ledger
    for party in (1, 2):
        assert ledger.total(direction="down", party=party) == len(encode(request, sender=0))
        assert ledger.total(direction="up", party=party) == len(encode(reply, sender=party))
    assert ledger.messages(round=3) == 4
    assert ledger.total(kind="EmbedRequest") == 2 * len(encode(request, sender=0))


def test_a_failing_party_is_reported_as_data(factory: TransportFactory) -> None:
    # Prepare
    def broken(message: Message) -> Message:
        raise RuntimeError("disk on fire")

    transport = factory(endpoints({1: echo_handler(1), 2: broken}))

    # Execute
    exchange = transport.request({p: EmbedRequest(round=0, ids=torch.arange(2)) for p in (1, 2)})

    # Assert
    assert set(exchange.replies) == {1}
    assert "disk on fire" in repr(exchange.failures[2])
    with pytest.raises(ProtocolError, match="party 2"):
        exchange.raise_failures()


def test_a_reply_for_another_round_is_rejected(factory: TransportFactory) -> None:
    # Prepare
    transport = factory(endpoints({1: lambda m: Ack(round=m.round + 1)}))

    # Execute
    exchange = transport.request({1: Ack(round=0)})

    # Assert
    assert isinstance(exchange.failures[1], WireError)
    assert "stale or replayed" in str(exchange.failures[1])


def test_requests_must_come_from_the_server() -> None:
    # Prepare
    endpoint = PartyEndpoint(1, echo_handler(1))
    forged = encode(EmbedRequest(round=0, ids=torch.arange(2)), sender=2)

    # Execute / Assert
    with pytest.raises(WireError, match="only the server"):
        endpoint.handle_frame(forged)


def test_unknown_party_is_a_protocol_error(factory: TransportFactory) -> None:
    transport = factory(endpoints({1: echo_handler(1)}))
    with pytest.raises(ProtocolError, match="no party 7"):
        transport.request({7: EmbedRequest(round=0, ids=torch.arange(2))})


def test_a_request_that_cannot_be_encoded_reaches_no_party_and_is_not_counted(
    factory: TransportFactory,
) -> None:
    # Prepare
    heard: list[int] = []

    def listening(party: int) -> Callable[[Message], Message]:
        def handle(message: Message) -> Message:
            heard.append(party)
            return echo_handler(party)(message)

        return handle

    transport = factory(endpoints({1: listening(1), 2: listening(2)}))
    ids = torch.arange(2)

    too_late = EmbedRequest(round=1 << 32, ids=ids)  # its round does not fit the frame header

    # Execute / Assert
    with pytest.raises(WireError, match="does not fit the u32 header field"):
        transport.request({1: EmbedRequest(round=0, ids=ids), 2: too_late})
    assert transport.ledger.total() == 0
    # Assert: the control: a request that encodes reaches both, and party 1 heard nothing before
    exchange = transport.request({p: EmbedRequest(round=0, ids=ids) for p in (1, 2)})
    assert sorted(exchange.replies) == [1, 2]
    assert sorted(heard) == [1, 2]
