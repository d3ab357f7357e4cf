"""The in-process transport: codec steps across all parties in turn, results as party by party."""

from __future__ import annotations

from collections.abc import Callable

import torch

from vfl.errors import WireError
from vfl.transport import InProcTransport, PartyEndpoint
from vfl.transport.base import Exchange
from vfl.wire import EmbedReply, EmbedRequest, Message

Events = list[tuple[str, int]]


class SpyEndpoint(PartyEndpoint):
    """An endpoint that logs its steps and can fail one of them."""

    def __init__(self, party_id: int, events: Events, *, fail: str | None = None) -> None:
        super().__init__(party_id, self._handle)
        self.events, self.fail = events, fail

    def _step(self, name: str) -> None:
        self.events.append((name, self.party_id))
        if self.fail == name:
            raise WireError(f"party {self.party_id} fails to {name}")

    def decode_request(self, data: bytes) -> Message:
        self._step("decode")
        return super().decode_request(data)

    def _handle(self, message: Message) -> Message:
        self._step("handle")
        assert isinstance(message, EmbedRequest)
        return EmbedReply(round=message.round, embedding=message.ids.float().unsqueeze(1))

    def encode_reply(self, reply: Message) -> bytes:
        self._step("encode")
        return super().encode_reply(reply)


def exchange_with(
    fails: dict[int, str],
) -> tuple[Events, InProcTransport, Callable[[], Exchange]]:
    events: Events = []
    spies = {p: SpyEndpoint(p, events, fail=fails.get(p)) for p in (1, 2, 3)}
    transport = InProcTransport(spies)
    request = EmbedRequest(round=4, ids=torch.arange(3))
    return events, transport, lambda: transport.request(dict.fromkeys(spies, request))


def test_each_codec_step_runs_for_every_party_before_the_next_and_handlers_in_party_order() -> None:
    # Prepare
    events, _, run = exchange_with({})

    # Execute
    run()

    # Assert
    assert events == [
        (step, party) for step in ("decode", "handle", "encode") for party in (1, 2, 3)
    ]


def test_a_party_failing_at_any_step_is_reported_in_party_order_and_the_others_answer() -> None:
    # Prepare: party 3 fails to decode, party 1 in its handler, party 2 is fine
    events, transport, run = exchange_with({1: "handle", 3: "decode"})

    # Execute
    exchange = run()

    # Assert: failures in party order, whatever step each failed at; only party 2 went on
    assert list(exchange.failures) == [1, 3]
    assert list(exchange.replies) == [2]
    assert ("handle", 3) not in events and ("encode", 1) not in events
    ledger = transport.ledger
    assert [ledger.messages(direction="down", party=p) for p in (1, 2, 3)] == [1, 1, 1]
    assert [ledger.messages(direction="up", party=p) for p in (1, 2, 3)] == [0, 1, 0]
