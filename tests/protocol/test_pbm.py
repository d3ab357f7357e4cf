"""VFL-PBM in the protocol: counts, secure aggregation, the accountant, config checks."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest
import torch

from tests.protocol.test_cvfl import BASE, data
from tests.secagg.stats import assert_masked
from vfl.config import load_config
from vfl.errors import ConfigError
from vfl.privacy.binomial import CountSampler
from vfl.privacy.pbm import PoissonBinomialMechanism
from vfl.run.compose import build_session
from vfl.run.session import LocalParties, Session
from vfl.secagg import decode_masked
from vfl.transport.inproc import InProcTransport
from vfl.wire import MaskedCounts, Message, PackedCounts, decode

PBM = [
    "model.head.fusion=sum",
    "model.head.hidden=[]",
    "model.bottom.output_activation=tanh",
    "privacy.mechanism=pbm",
    "privacy.trials=4",
    "privacy.beta=0.25",
]


def build(*overrides: str) -> Session[LocalParties]:
    return build_session(load_config(None, [*BASE, *PBM, *overrides]), data())


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["privacy.mechanism=pbm"], "use fusion 'sum', not 'concat'"),
        (["privacy.mechanism=pbm", "model.head.fusion=sum"], "needs bounded embeddings"),
        (["privacy.secure_aggregation=on", "model.head.fusion=sum"], "set privacy.mechanism"),
        (["privacy.secure_aggregation=on"], "reveals only the sum"),
        ([*PBM, "protocol.labels=shared"], "labels private to the server"),
        ([*PBM, "compress.embedding.name=scalar"], "uploads are PBM counts"),
    ],
)
def test_invalid_private_configs_are_rejected(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(None, overrides)


class Tap:
    """Records every frame the server receives and every count block the parties draw."""

    def __init__(self, simulation: Session[LocalParties], monkeypatch: pytest.MonkeyPatch) -> None:
        self.frames: list[Message] = []
        self.counts: dict[int, list[np.ndarray]] = {p.party_id: [] for p in simulation.parties}
        transport = simulation.trainer.transport  # type: ignore[attr-defined]
        assert isinstance(transport, InProcTransport)
        for endpoint in transport._endpoints.values():  # every reply frame a party encodes
            monkeypatch.setattr(endpoint, "encode_reply", self._server_side(endpoint.encode_reply))
        for party in simulation.parties:
            privacy = party.options.privacy
            assert privacy is not None
            privacy.mechanism = _Recording(privacy.mechanism, self.counts[party.party_id])

    def _server_side(self, encode: Callable[[Message], bytes]) -> Callable[[Message], bytes]:
        def encode_reply(reply: Message) -> bytes:
            frame = encode(reply)
            self.frames.append(decode(frame).message)
            return frame

        return encode_reply


class _Recording(PoissonBinomialMechanism):
    def __init__(self, inner: PoissonBinomialMechanism, log: list[np.ndarray]) -> None:
        super().__init__(clip=inner.clip, trials=inner.trials, beta=inner.beta)
        object.__setattr__(self, "log", log)

    def privatize(
        self, x: torch.Tensor, *, sampler: CountSampler | torch.Generator
    ) -> torch.Tensor:
        counts = super().privatize(x, sampler=sampler)
        self.log.append(counts.numpy().copy())  # type: ignore[attr-defined]
        return counts


def test_the_server_never_receives_an_unmasked_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # Prepare: M=3, b=4 -> k = ceil(log2(13)) = 4: small enough to test uniformity
    simulation = build()
    tap = Tap(simulation, monkeypatch)

    # Execute
    simulation.trainer.setup()
    simulation.trainer.train_epoch(0)

    # Assert: every training reply is a masked block, uniform and independent of the counts
    masked = [m for m in tap.frames if isinstance(m, MaskedCounts)]
    assert len(masked) == 3 * simulation.trainer.rounds
    assert not any(isinstance(m, PackedCounts) for m in tap.frames)
    for party, draws in tap.counts.items():
        blocks = [
            decode_masked(m.payload, shape=d.shape, bits=4)
            for m, d in zip(masked[party - 1 :: 3], draws, strict=True)
        ]
        assert_masked(
            np.concatenate([b.reshape(-1) for b in blocks]),
            np.concatenate([d.reshape(-1) for d in draws]),
            bits=4,
        )
        assert all(not np.array_equal(b, d) for b, d in zip(blocks, draws, strict=True))


def test_masked_uploads_cost_k_bits_per_value() -> None:
    # Execute
    simulation = build("train.shuffle=false")
    simulation.trainer.setup()
    simulation.trainer.train_epoch(0)

    # Assert: B x P = 32 x 4 values at k = 4 bits, plus the frame and bytes headers
    assert simulation.ledger.total(round=0, kind="MaskedCounts", party=1) == (
        10 + 4 + 32 * 4 * 4 // 8
    )


def test_without_secure_aggregation_counts_travel_packed_in_the_clear() -> None:
    simulation = build("privacy.secure_aggregation=off", "train.shuffle=false")
    simulation.trainer.train_epoch(0)
    # b = 4 -> 3 bits per count
    assert simulation.ledger.total(round=0, kind="PackedCounts", party=1) == (
        10 + 4 + 32 * 4 * 3 // 8
    )


def test_secure_evaluation_sums_match_the_plain_ones() -> None:
    # Prepare: the same model evaluated through masked fixed-point sums and in the clear
    secure, plain = build(), build("privacy.secure_aggregation=off")
    secure.trainer.setup()

    # Execute
    a, b = secure.trainer.evaluate(1), plain.trainer.evaluate(1)

    # Assert
    assert a["loss"] == pytest.approx(b["loss"], abs=1e-4)
    assert a["accuracy"] == b["accuracy"]


def test_private_training_learns_and_reports_a_growing_epsilon() -> None:
    # Prepare
    simulation = build("privacy.trials=64", "train.optimizer.name=adam", "train.optimizer.lr=0.02")
    trainer = simulation.trainer
    trainer.setup()
    epsilons = []

    # Execute
    for epoch in range(12):
        trainer.train_epoch(epoch)
        epsilons.append(trainer.privacy_spent()["epsilon"])  # type: ignore[index]

    # Assert
    assert trainer.evaluate(1)["accuracy"] > 0.6
    assert all(a < b for a, b in itertools.pairwise(epsilons))
