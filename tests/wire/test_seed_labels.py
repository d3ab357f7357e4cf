"""Both ends of a compressed message derive its dither seed from the same named label.

A run records every seed a codec encodes with and every seed one decodes with: each decoded seed
must be one the sender used, and every label asked for must be one of ``SeedLabel`` (or an
evaluation chunk's), so a misspelt label at either end fails here instead of silently giving
each end its own dither.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pytest
import torch

from tests.conftest import make_vertical_data
from vfl.compress.codec import MessageSeeds
from vfl.compress.compressor_codec import CompressorCodec
from vfl.config import load_config
from vfl.protocol.loop import ServerLoop
from vfl.run.compose import build_session
from vfl.wire import SPLIT_TEST, Message
from vfl.wire.seeds import SeedLabel, is_seed_label

LATTICE = (
    "compress.embedding.name=lattice",
    "compress.embedding.bits=3",
    "model.bottom.output_activation=tanh",
)
COMPRESSED_RUNS = {
    "shared-labels": ("protocol.labels=shared", "protocol.local_steps=2", *LATTICE),
    "embedding-and-gradient": (
        *LATTICE,
        "compress.gradient.name=scalar",
        "compress.gradient.bits=8",
    ),
    "sequential-refresh": ("protocol.schedule=sequential", "protocol.local_steps=2", *LATTICE),
    "compressed-evaluation": (*LATTICE, "compress.evaluation=on"),
}
"""Runs whose messages carry every label: embeddings, gradients, the server model, refreshed
embeddings (FedBCD-s) and evaluation chunks."""


@dataclass
class Seeds:
    """What a run's codecs and seed derivations saw."""

    labels: list[str] = field(default_factory=list)
    encoded: set[int] = field(default_factory=set)
    decoded: set[int] = field(default_factory=set)


@pytest.fixture
def seeds(monkeypatch: pytest.MonkeyPatch) -> Iterator[Seeds]:
    """Record every label asked for and every seed a codec encoded or decoded with."""
    seen = Seeds()
    for_message, encode, decode = (
        MessageSeeds.for_message,
        CompressorCodec.encode,
        CompressorCodec.decode,
    )

    def recorded_for_message(self: MessageSeeds, purpose: str, round_: int, party: int) -> int:
        seen.labels.append(purpose)
        return for_message(self, purpose, round_, party)

    def recorded_encode(self: CompressorCodec, x: torch.Tensor, **kwargs: object) -> bytes:
        seen.encoded.add(int(kwargs["seed"]))  # type: ignore[call-overload]
        return encode(self, x, **kwargs)  # type: ignore[arg-type]

    def recorded_decode(self: CompressorCodec, payload: bytes, **kwargs: object) -> torch.Tensor:
        seen.decoded.add(int(kwargs["seed"]))  # type: ignore[call-overload]
        return decode(self, payload, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(MessageSeeds, "for_message", recorded_for_message)
    monkeypatch.setattr(CompressorCodec, "encode", recorded_encode)
    monkeypatch.setattr(CompressorCodec, "decode", recorded_decode)
    yield seen


def train_and_evaluate(*overrides: str) -> None:
    """One epoch and an evaluation of a small three-party run."""
    config = load_config(None, ["train.epochs=1", "train.batch_size=32", *overrides])
    session = build_session(config, make_vertical_data(num_train=96, num_test=40))
    session.trainer.train_epoch(0)
    session.trainer.evaluate(SPLIT_TEST)


@pytest.mark.parametrize("overrides", COMPRESSED_RUNS.values(), ids=COMPRESSED_RUNS.keys())
def test_receivers_decode_with_the_seeds_senders_encoded_with(
    seeds: Seeds, overrides: tuple[str, ...]
) -> None:
    # Execute
    train_and_evaluate(*overrides)

    # Assert: every label is a named one, and each end derived the other's seeds
    assert seeds.encoded and seeds.decoded
    assert all(is_seed_label(label) for label in seeds.labels), set(seeds.labels)
    assert seeds.decoded == seeds.encoded


def test_the_runs_carry_every_label(seeds: Seeds) -> None:
    # Execute
    for overrides in COMPRESSED_RUNS.values():
        train_and_evaluate(*overrides)

    # Assert: the cases above cover each label
    used = set(seeds.labels)
    assert {label.value for label in SeedLabel} <= used
    assert any(label.startswith("evaluation-") for label in used)


def test_a_label_one_end_misspells_is_caught(seeds: Seeds, monkeypatch: pytest.MonkeyPatch) -> None:
    # Prepare (negative control): the receiver of refreshed embeddings misspells its label
    decode_embeddings = ServerLoop.decode_embeddings

    def misspelt(
        self: ServerLoop, replies: Mapping[int, Message], batch: int, purpose: str = "embedding"
    ) -> dict[int, torch.Tensor]:
        purpose = "embedding-refesh" if purpose == SeedLabel.REFRESH else purpose
        return decode_embeddings(self, replies, batch, purpose)

    monkeypatch.setattr(ServerLoop, "decode_embeddings", misspelt)

    # Execute
    train_and_evaluate(*COMPRESSED_RUNS["sequential-refresh"])

    # Assert: both checks see it
    assert not all(is_seed_label(label) for label in seeds.labels)
    assert not seeds.decoded <= seeds.encoded


@pytest.mark.parametrize(
    ("label", "named"),
    [
        ("embedding", True),
        ("server_model", True),
        ("embedding-refresh", True),
        ("evaluation-1-40", True),
        ("embeding", False),
        ("evaluation-test-40", False),
        ("evaluation-1", False),
        ("", False),
    ],
)
def test_only_named_labels_are_seed_labels(label: str, named: bool) -> None:
    # Execute / Assert
    assert is_seed_label(label) is named
