"""Online scoring at the label holder (``vfl serve``): IDs in, class probabilities out.

A ``Scorer`` holds the server's model bundle and the transport its parties (``vfl party
--serve``) keep their authenticated streams on. Requests that arrive together are answered in
one round trip: their IDs are joined, every party is asked to look them up in its current table
(``LookupRequest``) and then to embed them (the evaluation request of the protocol loop, built
by the composition root exactly as in training, so with PBM the embeddings are securely summed
as in evaluation), and the head turns them into probabilities. An ID that some party cannot
score fails alone, with that party's reason; the others are scored.

A party that is down fails the requests of its round trip after a bounded wait
(``wait_s``), naming it; the service stays up and sets every party up again (its bundle, and
the secure aggregation keys with PBM) once all are connected again.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from vfl.deploy.messages import LookupReply, LookupRequest
from vfl.deploy.predicting import model_loop, set_up_parties
from vfl.deploy.score_client import ERROR, RESULTS
from vfl.errors import ConfigError, ProtocolError, WireError
from vfl.results.metrics import Task
from vfl.run import bundles
from vfl.run.predict import probabilities
from vfl.transport.grpc_transport import GrpcTransport
from vfl.transport.link import PartyUnavailableError, PartyUnresponsiveError
from vfl.wire import SPLIT_TEST

log = logging.getLogger(__name__)

MAX_IDS = 10_000
"""The most IDs one request, and one round trip, may carry."""


@dataclass(frozen=True)
class Scored:
    """The outcome of one ID: its class probabilities, or why it could not be scored.

    Attributes:
        id: The ID, as requested.
        probabilities: One probability per class (empty if it failed).
        error: Why it could not be scored ("" if scored).
        notes: Remarks on a scored ID (a category unseen in training, encoded as all zeros).
    """

    id: str
    probabilities: tuple[float, ...] = ()
    error: str = ""
    notes: tuple[str, ...] = ()


class ScoringLoop(Protocol):
    """Scores the rows the parties just looked up (a ``ServerLoop``, or SecureBoost's walk)."""

    rounds: int

    def logits_for(self, ids: torch.Tensor, split: int) -> torch.Tensor:
        """The logits of the looked-up rows at positions ``ids``."""
        ...

    def close(self) -> None:
        """Tell every party the service is over."""
        ...


class ScoringModel(Protocol):
    """The server's model as the scorer uses it."""

    @property
    def classes(self) -> tuple[str, ...]:
        """The class names, in class-index order."""
        ...

    def set_up(self, transport: GrpcTransport) -> ScoringLoop:
        """Set every connected party up from its bundle; the loop that scores with them."""
        ...


@dataclass(frozen=True)
class NeuralModel:
    """A neural model's server bundle, scored through the protocol loop it was trained with."""

    bundle: bundles.ServerBundle

    @property
    def classes(self) -> tuple[str, ...]:
        """The class names, in class-index order."""
        return self.bundle.classes

    def set_up(self, transport: GrpcTransport) -> ScoringLoop:
        """Set the parties up from their bundles and build the loop (its keys included)."""
        set_up_parties(transport, self.bundle)
        loop = model_loop(self.bundle, transport, torch.zeros(1, dtype=torch.int64))
        loop.setup()
        return loop


@dataclass
class _Request:
    ids: list[str]
    done: Future[list[Scored]] = field(default_factory=Future)


class Scorer:
    """Scores IDs with the parties of a deployment; concurrent requests share round trips.

    Args:
        transport: The server's transport (listening; parties connect with ``--serve``).
        model: The server's model (``NeuralModel`` of its bundle, or a SecureBoost one).
        wait_s: How long a round trip waits for a party that is not connected.
        max_batch: The most IDs joined into one round trip.
    """

    def __init__(
        self,
        transport: GrpcTransport,
        model: ScoringModel,
        *,
        wait_s: float = 5.0,
        max_batch: int = MAX_IDS,
    ) -> None:
        if wait_s <= 0 or max_batch < 1:
            raise ConfigError(f"need wait_s > 0 and max_batch >= 1, got {wait_s}, {max_batch}")
        self.transport = transport
        self.model = model
        self.wait_s = wait_s
        self.max_batch = max_batch
        self.task = Task(len(model.classes))
        self._queue: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._loop: ScoringLoop | None = None
        self._instances: dict[int, str] = {}
        self._round = 0
        self._worker = threading.Thread(target=self._work, name="vfl-scorer", daemon=True)
        self._worker.start()

    def score(self, ids: Sequence[str]) -> list[Scored]:
        """Score ``ids`` (thread-safe; joins other callers' IDs into the same round trip).

        Raises:
            ConfigError: if there are no IDs or more than ``MAX_IDS``.
        """
        if not ids or len(ids) > MAX_IDS:
            raise ConfigError(f"a request scores 1 to {MAX_IDS} IDs, got {len(ids)}")
        request = _Request(list(ids))
        self._queue.put(request)
        return request.done.result()

    def prepare(self) -> None:
        """Set the parties up now, once all are connected, instead of at the first request."""
        self._queue.put(_Request([]))

    def close(self) -> None:
        """Stop the worker after the requests already queued."""
        self._queue.put(None)
        self._worker.join()

    def shut_down_parties(self) -> None:
        """Tell the parties the service is over (those that cannot be told are logged)."""
        loop, self._loop = self._loop, None
        if loop is None:
            return
        try:
            loop.close()
        except (ProtocolError, WireError, PartyUnavailableError, PartyUnresponsiveError) as error:
            log.warning("could not tell every party the service is over: %s", error)

    def _work(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch, stop = [first], False
            count = len(first.ids)
            while count < self.max_batch:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                batch.append(more)
                count += len(more.ids)
            self._answer(batch)
            if stop:
                return

    def _answer(self, batch: list[_Request]) -> None:
        ids = [key for request in batch for key in request.ids]
        if not ids:  # only preparations
            self._prepare(batch)
            return
        try:
            results = self._round_trip(ids)
        except (ProtocolError, WireError, PartyUnavailableError, PartyUnresponsiveError) as error:
            self._loop = None  # set every party up again before the next round trip
            reason = f"not scored: {error}"
            log.warning("a round trip of %d IDs failed: %s", len(ids), error)
            results = [Scored(key, error=reason) for key in ids]
        except Exception as error:  # never let one request stop the service
            self._loop = None
            log.exception("a round trip of %d IDs failed", len(ids))
            results = [Scored(key, error=f"not scored: internal error: {error}") for key in ids]
        start = 0
        for request in batch:
            request.done.set_result(results[start : start + len(request.ids)])
            start += len(request.ids)

    def _prepare(self, batch: list[_Request]) -> None:
        try:
            self._ready()
        except (ProtocolError, WireError, PartyUnavailableError, PartyUnresponsiveError) as error:
            self._loop = None
            log.warning(
                "could not set the parties up yet (the first request will retry): %s", error
            )
        for request in batch:
            request.done.set_result([])

    def _round_trip(self, ids: list[str]) -> list[Scored]:
        loop = self._ready()
        self._round += 1
        loop.rounds = self._round
        self.transport.ledger.clear()  # a service keeps no per-round history
        lookup = LookupRequest(round=self._round, ids=tuple(key.encode() for key in ids))
        messages = dict.fromkeys(self.transport.party_ids, lookup)
        replies = self.transport.request(messages, phase="eval").replies_of(LookupReply)
        failed: dict[int, list[str]] = {}
        notes: dict[int, list[str]] = {}
        for _, reply in sorted(replies.items()):
            for position, reason in zip(reply.failed.tolist(), reply.reasons, strict=True):
                failed.setdefault(position, []).append(reason.decode(errors="replace"))
            for position, note in zip(reply.noted.tolist(), reply.notes, strict=True):
                notes.setdefault(position, []).append(note.decode(errors="replace"))
        if len(failed) == len(ids):
            return [Scored(key, error="; ".join(failed[i])) for i, key in enumerate(ids)]
        logits = loop.logits_for(torch.arange(len(ids), dtype=torch.int64), SPLIT_TEST)
        scores = probabilities(self.task, logits)
        return [
            Scored(key, error="; ".join(failed[i]))
            if i in failed
            else Scored(key, tuple(float(p) for p in scores[i]), notes=tuple(notes.get(i, ())))
            for i, key in enumerate(ids)
        ]

    def _ready(self) -> ScoringLoop:
        """The protocol loop, once every party is connected and set up from its bundle.

        Raises:
            PartyUnavailableError: naming the parties still missing after ``wait_s``.
        """
        self.transport.wait_for_parties(self.wait_s)
        connected = self.transport.connected()
        if self._loop is not None and connected == self._instances:
            return self._loop
        if self._loop is not None:
            log.info("a party reconnected; setting every party up again")
        self._loop = None
        loop = self.model.set_up(self.transport)
        self._instances = {party: self.transport.answered_by(party) for party in connected}
        self._loop = loop
        log.info("every party is set up from its bundle; scoring")
        return loop


def as_json(results: Sequence[Scored], classes: Sequence[str]) -> dict[str, object]:
    """The scoring API's answer: the classes, and per ID its prediction or its error."""
    answers: list[dict[str, object]] = []
    for result in results:
        if result.error:
            answers.append({"id": result.id, ERROR: result.error})
            continue
        best = int(np.argmax(result.probabilities))
        entry: dict[str, object] = {
            "id": result.id,
            "predicted": classes[best],
            "probabilities": dict(zip(classes, result.probabilities, strict=True)),
        }
        if result.notes:
            entry["notes"] = list(result.notes)
        answers.append(entry)
    return {"classes": list(classes), RESULTS: answers}
