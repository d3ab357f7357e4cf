"""Pipelined rounds: a round's gradients travel with the next round's batch.

The parties compute exactly what they compute when every gradient travels on its own, so a
pipelined run ends in the same state, bit for bit, with the same metrics (bytes aside), for every
protocol variant; it sends one request and one reply per party and round instead of two of each.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.conftest import make_models, make_vertical_data
from tests.run.variants import VARIANTS, assert_same_state, write_run_config
from vfl.cli import main
from vfl.config import RunConfig
from vfl.config.protocols import ProtocolConfig
from vfl.errors import ProtocolError, WireError
from vfl.protocol.waiting import WaitingGradients
from vfl.roles.pending import PendingRound, SavedRound, generator_states
from vfl.run.api import clone_modules, simulate
from vfl.run.folders import resumed_config
from vfl.run.observe import Delivery, PartyObserver
from vfl.transport.base import PartyEndpoint
from vfl.wire import (
    SERVER_ID,
    Ack,
    CompressedGradEmbedRequest,
    CompressedGradRequest,
    EmbedReply,
    EmbedRequest,
    GradEmbedRequest,
    GradRequest,
    decode,
    encode,
    pipelined,
)

ADAM = lambda params: torch.optim.Adam(params, lr=1e-2)  # noqa: E731
PIPELINED = {"split-learning", "fedbcd-parallel", "active-party", "lvfl-schedule"}
PIPELINED |= {"pbm-secure-aggregation", "topk-gradient-selection"}
"""The variants whose gradients go to the parties after the exchange (private labels, parallel)."""
BYTES_FIELDS = ("bytes_up", "bytes_down")
TIME_FIELDS = ("wall_time", "epoch_train_seconds")


def run_dir_state(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """The final checkpoint's session state (ledger apart), the metrics and the ledger lines."""
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)["session"]
    state["trainer"].pop("ledger")
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    ledger = (run_dir / "ledger.csv").read_text().splitlines()[1:]
    return state, records, ledger


def without(records: list[dict[str, Any]], fields: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in fields} for r in records]


def training_messages(ledger: list[str]) -> int:
    """Messages of the ``train`` phase in a ``ledger.csv``'s lines."""
    return sum(int(line.split(",")[5]) for line in ledger if line.split(",")[1] == "train")


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_pipelined_run_trains_exactly_what_an_unpipelined_run_trains(
    tmp_path: Path, variant: str
) -> None:
    # Prepare: evaluations and checkpoints inside epochs too, so that waiting gradients must
    # reach the parties before each of them
    config = write_run_config(tmp_path)
    sets = [arg for item in VARIANTS[variant] for arg in ("--set", item)]
    within = ["--set", "train.epochs=2", "--set", "train.eval_every=3"]
    within += ["--set", "train.checkpoint_every=4"]
    on, off = tmp_path / "on", tmp_path / "off"

    # Execute
    assert main(["run", str(config), "--run-dir", str(on), *sets, *within]) == 0
    off_sets = [*sets, *within, "--set", "protocol.pipeline=false"]
    assert main(["run", str(config), "--run-dir", str(off), *off_sets]) == 0

    # Assert
    on_state, on_metrics, on_ledger = run_dir_state(on)
    off_state, off_metrics, off_ledger = run_dir_state(off)
    assert_same_state(on_state, off_state)
    ignored = (*BYTES_FIELDS, *TIME_FIELDS)
    assert without(on_metrics, ignored) == without(off_metrics, ignored)
    if variant in PIPELINED:
        assert training_messages(on_ledger) <= 0.75 * training_messages(off_ledger)
    else:  # nothing waits: the same messages
        assert on_ledger == off_ledger


def test_the_state_comparison_tells_runs_apart() -> None:
    # Prepare: a negative control: the comparison above must fail on states that differ
    data = make_vertical_data(num_train=64, widths=(3, 5))
    bottoms, head = make_models(data, embedding_dim=4)
    other_bottoms, other_head = clone_modules(bottoms, head)
    first = simulate(data, bottoms=bottoms, head=head, optimizer=ADAM, batch_size=16)
    second = simulate(data, bottoms=other_bottoms, head=other_head, optimizer=ADAM, batch_size=16)

    # Execute: one round more in the second run
    first.trainer.train_epoch(0)
    second.trainer.train_epoch(0)
    second.trainer.train_round(torch.arange(16))  # type: ignore[attr-defined]

    # Assert
    with pytest.raises(AssertionError):
        assert_same_state(first.state_dict()["parties"], second.state_dict()["parties"])


def test_an_epoch_sends_one_request_and_one_reply_per_party_and_round() -> None:
    # Prepare: 4 rounds of 16 samples, two parties
    data = make_vertical_data(num_train=64, widths=(3, 5))
    bottoms, head = make_models(data, embedding_dim=4)
    sim = simulate(data, bottoms=bottoms, head=head, optimizer=ADAM, batch_size=16, shuffle=False)

    # Execute
    sim.trainer.train_epoch(0)

    # Assert: round 0 asks for the batch alone, rounds 1-3 carry the previous round's gradient,
    # and the last round's gradient goes out on its own at the end of the epoch
    ledger = sim.ledger
    for party in (1, 2):
        assert ledger.messages(kind="EmbedRequest", party=party) == 1
        assert ledger.messages(kind="GradEmbedRequest", party=party) == 3
        assert ledger.messages(kind="EmbedReply", party=party) == 4
        assert ledger.messages(kind="GradRequest", party=party, round=3) == 1
        assert ledger.messages(kind="Ack", party=party) == 1
    grad = torch.zeros(16, 4)
    combined = GradEmbedRequest(round=2, grad=grad, ids=torch.arange(32, 48))
    assert ledger.total(round=2, kind="GradEmbedRequest", party=1) == len(
        encode(combined, sender=0)
    )


def test_the_pipelined_request_splits_into_the_two_requests_it_stands_for() -> None:
    # Prepare
    grad, ids = torch.randn(3, 2), torch.tensor([4, 0, 9])
    plain = pipelined(GradRequest(round=6, grad=grad), EmbedRequest(round=7, ids=ids))
    packed = pipelined(
        CompressedGradRequest(round=6, payload=b"xyz"), EmbedRequest(round=7, ids=ids)
    )

    # Execute
    decoded = [decode(encode(m, sender=SERVER_ID)).message for m in (plain, packed)]

    # Assert
    assert isinstance(decoded[0], GradEmbedRequest)
    assert isinstance(decoded[1], CompressedGradEmbedRequest)
    (step, embed), (packed_step, packed_embed) = (m.split() for m in decoded)  # type: ignore[attr-defined]
    assert isinstance(step, GradRequest) and step.round == 6 and torch.equal(step.grad, grad)
    assert packed_step == CompressedGradRequest(round=6, payload=b"xyz")
    for request in (embed, packed_embed):
        assert isinstance(request, EmbedRequest)
        assert request.round == 7 and torch.equal(request.ids, ids)


def test_only_a_gradient_travels_with_the_next_rounds_batch() -> None:
    # Prepare
    batch = EmbedRequest(round=3, ids=torch.arange(2))

    # Execute / Assert
    with pytest.raises(ValueError, match="not round 3's"):
        pipelined(GradRequest(round=1, grad=torch.zeros(2, 1)), batch)
    with pytest.raises(ValueError, match="not Ack"):
        pipelined(Ack(round=2), batch)


def test_a_pipelined_request_of_round_zero_is_refused() -> None:
    # Prepare: round 0 has no round before it whose gradient it could carry
    request = GradEmbedRequest(round=0, grad=torch.zeros(2, 1), ids=torch.arange(2))
    frame = encode(request, sender=SERVER_ID)

    # Execute / Assert
    with pytest.raises(WireError, match="before the first"):
        decode(frame).message.split()  # type: ignore[attr-defined]


def test_a_party_refuses_a_gradient_for_a_round_it_did_not_embed() -> None:
    # Prepare: party 1 embedded round 0; a request carries a gradient of round 4 with round 5's ids
    data = make_vertical_data(num_train=32, widths=(3, 5))
    bottoms, head = make_models(data, embedding_dim=4)
    sim = simulate(data, bottoms=bottoms, head=head, optimizer=ADAM, batch_size=8)
    party = sim.parties[0]
    endpoint = PartyEndpoint(1, party.handle)
    endpoint.handle_frame(encode(EmbedRequest(round=0, ids=torch.arange(8)), sender=SERVER_ID))
    before = [p.detach().clone() for p in party.model.parameters()]
    stale = GradEmbedRequest(round=5, grad=torch.zeros(8, 4), ids=torch.arange(8))

    # Execute / Assert: refused before any step or embedding
    with pytest.raises(WireError, match="round 4"):
        endpoint.handle_frame(encode(stale, sender=SERVER_ID))
    assert all(torch.equal(a, b) for a, b in zip(before, party.model.parameters(), strict=True))
    reply = decode(
        endpoint.handle_frame(encode(GradRequest(round=0, grad=torch.zeros(8, 4)), sender=0))
    ).message
    assert reply == Ack(round=0)  # the round it did embed is still waiting for its gradient
    assert not isinstance(reply, EmbedReply)


def test_pipelining_is_on_by_default_and_can_be_turned_off() -> None:
    # Prepare / Execute
    default = RunConfig().protocol
    off = ProtocolConfig(pipeline=False)

    # Assert
    assert default.pipeline is True and off.pipeline is False


def test_a_failed_step_in_a_pipelined_round_stops_the_run() -> None:
    # Prepare: party 2's handler fails on the second round's request, which carries a gradient
    data = make_vertical_data(num_train=64, widths=(3, 5))
    bottoms, head = make_models(data, embedding_dim=4)
    sim = simulate(data, bottoms=bottoms, head=head, optimizer=ADAM, batch_size=16)
    transport = sim.trainer.transport  # type: ignore[attr-defined]
    endpoint = transport._endpoints[2]
    handle = endpoint.handler

    def failing(message: Any) -> Any:
        if isinstance(message, GradEmbedRequest):
            raise RuntimeError("disk full")
        return handle(message)

    endpoint.handler = failing

    # Execute / Assert
    with pytest.raises(ProtocolError, match="disk full"):
        sim.trainer.train_epoch(0)


def test_a_restored_open_round_draws_what_its_first_forward_pass_drew() -> None:
    # Prepare: a bottom with dropout and BatchNorm, embedded once with the generators' states kept
    torch.manual_seed(3)
    model = torch.nn.Sequential(
        torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.Dropout(0.5)
    )
    rows, ids = torch.randn(10, 6), torch.tensor([1, 4, 7])
    rng = generator_states(torch.device("cpu"))
    first = model(rows[ids])
    saved = SavedRound.from_state(PendingRound(5, ids, first, rng).state_dict())
    assert saved is not None
    after_first = torch.get_rng_state()
    statistics = [b.clone() for b in model.buffers()]

    # Execute
    again = saved.embed_again(model, lambda batch: model(rows[batch]), torch.device("cpu"))

    # Assert: the same dropout draws; the global generator and the running statistics are
    # left where the first pass left them
    assert again.round == 5 and torch.equal(again.ids, ids)
    assert torch.equal(again.embedding, first)
    assert torch.equal(torch.get_rng_state(), after_first)
    assert all(torch.equal(a, b) for a, b in zip(model.buffers(), statistics, strict=True))
    assert not torch.equal(model(rows[ids]), first)  # negative control: fresh draws differ
    assert not all(torch.equal(a, b) for a, b in zip(model.buffers(), statistics, strict=True))


def test_a_checkpoint_between_a_rounds_two_messages_resumes_to_the_same_models() -> None:
    # Prepare: two identical runs; the first is checkpointed after round 1 of 4, while round 1's
    # gradient waits for round 2's batch, and restored into a fresh copy that finishes the epoch
    data = make_vertical_data(num_train=64, widths=(3, 5))
    bottoms, head = make_models(data, embedding_dim=4)
    copies = [clone_modules(bottoms, head) for _ in range(2)]
    straight = simulate(data, bottoms=bottoms, head=head, optimizer=ADAM, batch_size=16)
    stopped = simulate(data, bottoms=copies[0][0], head=copies[0][1], optimizer=ADAM, batch_size=16)
    resumed = simulate(data, bottoms=copies[1][0], head=copies[1][1], optimizer=ADAM, batch_size=16)
    straight.trainer.train_epoch(0)
    saved: list[dict[str, Any]] = []

    def stop_after_round_1(loss: float) -> None:
        if stopped.trainer.rounds == 2:
            saved.append(stopped.state_dict())
            raise KeyboardInterrupt

    # Execute
    with pytest.raises(KeyboardInterrupt):
        stopped.trainer.train_epoch(0, on_round=stop_after_round_1)
    assert saved[0]["trainer"]["waiting"]  # round 1's gradients were still waiting
    file = io.BytesIO()
    torch.save(saved[0], file)
    file.seek(0)
    resumed.load_state_dict(torch.load(file, weights_only=True))
    resumed.trainer.train_epoch(0, start=2)

    # Assert
    assert_same_state(resumed.state_dict()["parties"], straight.state_dict()["parties"])
    assert_same_state(resumed.trainer.state_dict(), straight.trainer.state_dict())


def test_waiting_gradients_are_never_dropped() -> None:
    # Prepare
    waiting = WaitingGradients()
    waiting.keep({1: GradRequest(round=4, grad=torch.zeros(2, 1))})

    # Execute / Assert: a second round's gradients, or a batch not asked of the waiting party
    with pytest.raises(ProtocolError, match="round \\[4\\] still wait"):
        waiting.keep({1: GradRequest(round=5, grad=torch.zeros(2, 1))})
    with pytest.raises(ProtocolError, match="parties \\[1\\]"):
        waiting.with_batch(EmbedRequest(round=5, ids=torch.arange(2)), (2, 3))


def test_an_attack_observer_reports_a_waiting_gradient_after_a_restore() -> None:
    # Prepare: party 1 embeds round 0 and is checkpointed; a fresh party and observer restore it
    data = make_vertical_data(num_train=32, widths=(3, 5))
    bottoms, head = make_models(data, embedding_dim=4)
    sim = simulate(data, bottoms=bottoms, head=head, optimizer=ADAM, batch_size=8)
    party = sim.parties[0]
    party.handle(EmbedRequest(round=0, ids=torch.tensor([3, 1, 4, 1, 5, 9, 2, 6])))
    state = party.state_dict()
    fresh_bottoms, fresh_head = make_models(data, embedding_dim=4)
    fresh = simulate(data, bottoms=fresh_bottoms, head=fresh_head, optimizer=ADAM, batch_size=8)
    restored = fresh.parties[0]
    restored.load_state_dict(state)
    seen: list[Delivery] = []
    observer = PartyObserver(
        1,
        restored.handle,
        seen.append,
        gradient=None,
        seeds=restored.options.seeds,
        width=4,
        open_ids=restored.open_round_ids,
    )
    grad = torch.randn(8, 4)

    # Execute: round 0's gradient arrives with round 1's batch
    observer(GradEmbedRequest(round=1, grad=grad, ids=torch.arange(8)))

    # Assert: the gradient is reported with round 0's ids, then round 1's batch
    assert [(d.kind, d.round) for d in seen] == [("GradRequest", 0), ("EmbedRequest", 1)]
    assert seen[0].ids is not None and seen[0].ids.tolist() == [3, 1, 4, 1, 5, 9, 2, 6]
    assert seen[0].tensor is not None and torch.equal(seen[0].tensor, grad)


def test_a_run_folder_from_before_pipelined_rounds_resumes_without_them(tmp_path: Path) -> None:
    # Prepare: a saved config without protocol.pipeline, as every run folder before it has
    (tmp_path / "config.toml").write_text('[protocol]\nmode = "vfl"\n[train]\nepochs = 3\n')
    current = tmp_path / "current"
    current.mkdir()
    (current / "config.toml").write_text("[protocol]\npipeline = true\n")

    # Execute
    old = resumed_config(tmp_path, [])
    new = resumed_config(current, [])

    # Assert
    assert old.protocol.pipeline is False
    assert new.protocol.pipeline is True  # negative control: a saved key is kept as it is
