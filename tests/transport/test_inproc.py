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
        round_ = message.round + (self.fail == "stale")  # a reply for another round
        return EmbedReply(round=round_, embedding=message.ids.float().unsqueeze(1))

    def encode_reply(self, reply: Message) -> bytes:
        self._step("encode")
        frame = super().encode_reply(reply)
        return frame[:2] if self.fail == "short" else frame  # too short to hold a header


def exchange_with(
    fails: dict[int, str], parties: tuple[int, ...] = (1, 2, 3)
) -> tuple[Events, InProcTransport, Callable[[], Exchange]]:
    events: Events = []
    spies = {p: SpyEndpoint(p, events, fail=fails.get(p)) for p in parties}
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
    # Prepare: party 5 fails to decode, 1 in its handler, 2 to encode, 3 sends a frame too short
    # to read, 4 answers another round; party 6 is fine
    fails = {5: "decode", 1: "handle", 2: "encode", 3: "short", 4: "stale"}
    events, transport, run = exchange_with(fails, parties=(1, 2, 3, 4, 5, 6))

    # Execute
    exchange = run()

    # Assert: each failure is the party's own, in party order; only party 6 answered
    assert list(exchange.failures) == [1, 2, 3, 4, 5]
    for party, error in exchange.failures.items():
        expected = {3: "shorter than the 10-byte header", 4: "replied for round 5"}
        assert expected.get(party, f"party {party} fails to") in str(error)
    assert list(exchange.replies) == [6]
    assert ("handle", 5) not in events and ("encode", 1) not in events
    # as one party after another: every request counted, a reply once it was encoded and
    # readable enough to name its kind (the stale one is counted, then refused)
    ledger = transport.ledger
    assert [ledger.messages(direction="down", party=p) for p in range(1, 7)] == [1] * 6
    assert [ledger.messages(direction="up", party=p) for p in range(1, 7)] == [0, 0, 0, 1, 0, 1]
