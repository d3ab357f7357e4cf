"""The shared transport contract, run against the gRPC transport on loopback.

The tests are those of ``tests/transport/test_transport_contract.py``, imported so that they
run here with a ``factory`` that builds a TLS gRPC server and one dialing party per endpoint.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from tests.deploy.loopback import Loopback, start_loopback
from tests.transport.test_transport_contract import (
    TransportFactory,
    test_a_failing_party_is_reported_as_data,
    test_a_reply_for_another_round_is_rejected,
    test_a_request_that_cannot_be_encoded_reaches_no_party_and_is_not_counted,
    test_each_party_gets_its_message_and_answers,
    test_ledger_records_the_encoded_size_of_every_message,
    test_unknown_party_is_a_protocol_error,
)
from vfl.deploy.certs import PkiFiles
from vfl.transport import PartyEndpoint, Transport

__all__ = [
    "test_a_failing_party_is_reported_as_data",
    "test_a_reply_for_another_round_is_rejected",
    "test_a_request_that_cannot_be_encoded_reaches_no_party_and_is_not_counted",
    "test_each_party_gets_its_message_and_answers",
    "test_ledger_records_the_encoded_size_of_every_message",
    "test_unknown_party_is_a_protocol_error",
]


@pytest.fixture
def factory(pki: PkiFiles) -> Iterator[TransportFactory]:
    started: list[Loopback] = []

    def build(endpoints: Mapping[int, PartyEndpoint]) -> Transport:
        handlers = {party: endpoint.handle_frame for party, endpoint in endpoints.items()}
        loopback = start_loopback(pki, handlers)
        started.append(loopback)
        return loopback.transport

    yield build
    for loopback in started:
        loopback.close()
