"""``Events`` (the server process) and ``replay`` (the launcher) name event kinds alike."""

from __future__ import annotations

import io
import json
from typing import Any

from vfl.run.progress import EVENT_KEY, EventKind, Events, Progress, replay


class Recorded(Progress):
    """Every report it was given, as (method, arguments)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def note(self, text: str) -> None:
        self.calls.append(("note", (text,)))

    def epoch_begins(self, epoch: int, epochs: int, rounds: int, done: int = 0) -> None:
        self.calls.append(("epoch_begins", (epoch, epochs, rounds, done)))

    def rounds_done(self, done: int, loss: float) -> None:
        self.calls.append(("rounds_done", (done, loss)))

    def epoch_ends(self, line: str) -> None:
        self.calls.append(("epoch_ends", (line,)))


def test_every_event_the_server_writes_is_replayed_by_the_launcher() -> None:
    # Prepare
    stream = io.StringIO()
    events = Events(stream)

    # Execute: one report of each kind, written and read back
    events.note("aligned")
    events.epoch_begins(0, 2, rounds=1)
    events.round_ends(0.5)
    events.epoch_ends("epoch 1/2")
    replayed = Recorded()
    lines = stream.getvalue().splitlines()
    answered = [replay(line, replayed) for line in lines]

    # Assert: each kind written is one the replay knows, and it reports the same values
    assert all(answered)
    assert {json.loads(line)[EVENT_KEY] for line in lines} == {kind.value for kind in EventKind}
    assert replayed.calls == [
        ("note", ("aligned",)),
        ("epoch_begins", (0, 2, 1, 0)),
        ("rounds_done", (1, 0.5)),
        ("epoch_ends", ("epoch 1/2",)),
    ]


def test_an_unknown_kind_reports_nothing() -> None:
    # Negative control: a misspelt kind is an event that no report follows
    replayed = Recorded()
    assert replay(json.dumps({EVENT_KEY: "epoch_begin", "epoch": 0}), replayed)
    assert replayed.calls == []
