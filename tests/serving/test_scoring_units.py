"""The scoring service's pieces in one process: request parsing, answers, batching."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from vfl.deploy.score_api import BadRequest, parse_request
from vfl.deploy.scoring import Scored, Scorer, as_json


@pytest.mark.parametrize(
    ("body", "ids"),
    [(b'{"ids": ["a", "b"]}', ["a", "b"]), (b'{"ids": [7, "8"]}', ["7", "8"])],
)
def test_a_request_names_ids_as_strings_or_integers(body: bytes, ids: list[str]) -> None:
    assert parse_request(body) == ids


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"[", "not UTF-8 JSON"),
        (b'["a"]', 'one key "ids"'),
        (b'{"ids": "a"}', "must be a list"),
        (b'{"ids": [true]}', '"ids"[0] is True'),
        (b'{"ids": [1.5]}', '"ids"[0] is 1.5'),
        (b'{"ids": ["a"], "more": 1}', 'one key "ids"'),
    ],
)
def test_a_malformed_request_says_what_is_wrong(body: bytes, reason: str) -> None:
    with pytest.raises(BadRequest) as refused:
        parse_request(body)
    assert reason in str(refused.value)


def test_the_answer_gives_each_id_its_class_or_its_error() -> None:
    # Prepare
    scored = [
        Scored("a", (0.25, 0.75), notes=("a note",)),
        Scored("b", error="party 2 holds no row with this ID"),
    ]

    # Execute
    answer = as_json(scored, ("no", "yes"))

    # Assert
    assert answer == {
        "classes": ["no", "yes"],
        "results": [
            {
                "id": "a",
                "predicted": "yes",
                "probabilities": {"no": 0.25, "yes": 0.75},
                "notes": ["a note"],
            },
            {"id": "b", "error": "party 2 holds no row with this ID"},
        ],
    }


class _Bundle:
    classes = ("no", "yes")


class RecordingScorer(Scorer):
    """A scorer whose round trip records its IDs; the first one waits until released."""

    def __init__(self) -> None:
        self.trips: list[list[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        super().__init__(None, _Bundle(), wait_s=1.0)  # type: ignore[arg-type]

    def _round_trip(self, ids: list[str]) -> list[Scored]:
        self.trips.append(list(ids))
        self.entered.set()
        self.release.wait()
        return [Scored(key, (0.5, 0.5)) for key in ids]


def test_requests_that_arrive_together_share_one_round_trip() -> None:
    # Prepare: the first request holds the round trip while three more queue up
    scorer = RecordingScorer()
    answers: dict[str, Any] = {}

    def ask(ids: list[str]) -> None:
        answers[ids[0]] = scorer.score(ids)

    first = threading.Thread(target=ask, args=(["a"],))
    first.start()
    scorer.entered.wait()
    later = [threading.Thread(target=ask, args=(ids,)) for ids in (["b"], ["c", "d"], ["e"])]
    for thread in later:
        thread.start()
    while scorer._queue.qsize() < 3:  # the three are queued (no timing assumption)
        threading.Event().wait(0.01)

    # Execute
    scorer.release.set()
    for thread in [first, *later]:
        thread.join()
    scorer.close()

    # Assert: two round trips; each caller got exactly its own IDs back, in order
    assert scorer.trips[0] == ["a"]
    assert sorted(scorer.trips[1]) == ["b", "c", "d", "e"] and len(scorer.trips) == 2
    assert [r.id for r in answers["c"]] == ["c", "d"]
    assert [r.id for r in answers["b"]] == ["b"]


def test_a_failing_round_trip_fails_its_ids_and_the_next_one_is_answered() -> None:
    # Prepare
    class Failing(RecordingScorer):
        def _round_trip(self, ids: list[str]) -> list[Scored]:
            self.trips.append(list(ids))
            if len(self.trips) == 1:
                raise RuntimeError("boom")
            return [Scored(key, (0.5, 0.5)) for key in ids]

    scorer = Failing()

    # Execute
    failed = scorer.score(["a"])
    answered = scorer.score(["b"])
    scorer.close()

    # Assert
    assert failed[0].error == "not scored: internal error: boom"
    assert answered[0].probabilities == (0.5, 0.5)
