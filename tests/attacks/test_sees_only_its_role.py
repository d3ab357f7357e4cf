"""The rule: an attack sees only what the transport delivers to its role, plus its role's own
data and model (copies) and its threat model's auxiliary knowledge.

Each run below trains with an attack and then walks everything the attack could reach (its own
state, every delivery it was handed, the knowledge copies it was given): no role, transport,
session or truth object, and no tensor that shares memory with anything in the run. The
negative controls show that the same check catches an attack that keeps a path to another
role's tensors or objects, and that deliveries are copies (the attack cannot write back).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tests.attacks.reach import Reach
from tests.run.variants import write_run_config
from vfl.attacks import AttackProbe, runner
from vfl.attacks.base import Attack, Inference, Knowledge
from vfl.attacks.label_inference import LabelInference
from vfl.attacks.scoring import Truth
from vfl.config import RunConfig, load_config
from vfl.data.vertical import VerticalData
from vfl.roles.party import Party
from vfl.roles.server import Server
from vfl.run.observe import Delivery
from vfl.run.session import LocalParties, Session
from vfl.transport.base import Transport

FORBIDDEN = (Party, Server, Transport, Session, VerticalData, Truth, AttackProbe)
"""Objects an attack must never reach: the roles, the wire, the run, the truth, its harness."""

PBM = (
    "privacy.mechanism=pbm",
    "privacy.trials=16",
    "model.head.fusion=sum",
    "model.bottom.output_activation=tanh",
)
ATTACKS: dict[str, tuple[str, ...]] = {
    "label inference by party 2": ("attack.name=label_inference", "attack.party=2"),
    "label inference under gradient compression": (
        "attack.name=label_inference",
        "attack.party=3",
        "compress.gradient.name=scalar",
        "compress.gradient.bits=4",
    ),
    "model completion by party 1": (
        "attack.name=model_completion",
        "attack.model_completion.labels=6",
        "attack.model_completion.epochs=5",
    ),
    "reconstruction by the server": (
        "attack.name=feature_reconstruction",
        "attack.role=server",
        "attack.party=2",
        "attack.feature_reconstruction.epochs=2",
    ),
    "reconstruction under PBM and secure aggregation": (
        "attack.name=feature_reconstruction",
        "attack.role=server",
        "attack.party=1",
        "attack.feature_reconstruction.epochs=2",
        "privacy.secure_aggregation=on",
        *PBM,
    ),
}


class Recorded:
    """Every delivery and knowledge an attack was handed, kept beside the attack."""

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self.knowledge: list[Knowledge] = []


class _Watched(Attack):
    """The real attack, with what it is handed also written to a ``Recorded``."""

    def __init__(self, inner: Attack, record: Recorded) -> None:
        self.inner, self.record = inner, record

    def observe(self, delivery: Delivery) -> None:
        self.record.deliveries.append(delivery)
        self.inner.observe(delivery)

    def infer(self, own: Knowledge, *, seed: int) -> Inference:
        self.record.knowledge.append(own)
        return self.inner.infer(own, seed=seed)


class WatchingProbe(AttackProbe):
    """The harness, keeping the run and the truth for the test (never for the attack)."""

    def __init__(self, config: RunConfig) -> None:
        super().__init__(config)
        self.record = Recorded()
        self.run: Session[LocalParties] | None = None
        self.data: VerticalData | None = None

    def attach(self, session: Session[LocalParties], data: VerticalData) -> None:
        super().attach(session, data)
        assert self.attack is not None
        self.real = self.attack
        self.attack = _Watched(self.attack, self.record)
        self.run, self.data = session, data


def _train(
    tmp_path: Path,
    overrides: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
    probe: type[WatchingProbe] | None = None,
) -> WatchingProbe:
    """Train a 3-party run with ``overrides``; the probe that watched it."""
    probes: list[WatchingProbe] = []
    tmp_path.mkdir(parents=True, exist_ok=True)

    def make(config: RunConfig) -> WatchingProbe:
        probes.append((probe or WatchingProbe)(config))
        return probes[-1]

    monkeypatch.setattr(runner, "AttackProbe", make)
    config = load_config(write_run_config(tmp_path), ["train.epochs=2", *overrides])
    runner.train(config, tmp_path / "run")
    return probes[0]


def _violations(probe: WatchingProbe, attack: object) -> list[str]:
    """Every path from ``attack`` (and what it was handed) into the run, in words."""
    assert probe.run is not None and probe.data is not None and probe._truth is not None
    run = Reach.of(probe.run, probe.data, probe._truth, stop=(AttackProbe,))
    handed = Reach.of(attack, probe.record.deliveries, probe.record.knowledge)
    assert len(run.storages) > 10 and handed.storages, "the walk found no tensors"
    found = [f"reaches a {type(o).__name__}" for o in handed.instances(FORBIDDEN)]
    shared = handed.storages & run.storages
    if shared:
        found.append(f"shares {len(shared)} tensor storages with the run")
    return found


@pytest.mark.parametrize("case", list(ATTACKS))
def test_an_attack_reaches_nothing_but_copies_of_what_its_role_was_handed(
    tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare / Execute
    probe = _train(tmp_path, ATTACKS[case], monkeypatch)

    # Assert
    assert probe.record.deliveries, "the attack observed nothing"
    assert probe.record.knowledge, "the attack was never asked to infer"
    assert _violations(probe, probe.real) == []


def test_a_party_attacker_is_handed_only_its_own_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare / Execute
    probe = _train(tmp_path, ATTACKS["label inference by party 2"], monkeypatch)

    # Assert
    deliveries = probe.record.deliveries
    assert {d.parties for d in deliveries} == {(2,)}
    assert {d.kind for d in deliveries if d.tensor is not None} == {"GradRequest"}
    assert {d.kind for d in deliveries} <= {
        "EmbedRequest",
        "GradRequest",
        "EvalRequest",
        "Shutdown",
    }


def test_under_secure_aggregation_the_server_is_handed_only_sums(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare / Execute
    probe = _train(
        tmp_path, ATTACKS["reconstruction under PBM and secure aggregation"], monkeypatch
    )

    # Assert: no delivery carries one party's upload alone
    with_content = [d for d in probe.record.deliveries if d.tensor is not None]
    assert with_content
    assert {d.parties for d in with_content} == {(1, 2, 3)}


class _Cheat(LabelInference):
    """A label inference that kept a path into the run when it was built."""

    def __init__(self, inner: LabelInference, peek: Any) -> None:
        self.__dict__.update(vars(inner))
        self.peek = peek


@pytest.mark.parametrize("peek", ["server labels", "another party", "a closure over the run"])
def test_the_check_catches_an_attack_that_keeps_a_path_into_the_run(
    tmp_path: Path, peek: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: the negative control: the same run, and an attack holding one forbidden path
    probe = _train(tmp_path, ATTACKS["label inference by party 2"], monkeypatch)
    assert probe.run is not None and isinstance(probe.real, LabelInference)
    session = probe.run
    paths: dict[str, Any] = {
        "server labels": lambda: session.trainer.server.labels[0],  # type: ignore[attr-defined]
        "another party": lambda: session.parties[0],
        "a closure over the run": lambda: lambda: session.trainer,
    }
    cheat = _Cheat(probe.real, paths[peek]())

    # Execute
    violations = _violations(probe, cheat)

    # Assert
    assert violations, f"an attack holding {peek} went unnoticed"


class _Vandal(_Watched):
    """Zeroes every tensor it is handed, in place, the moment it is handed it."""

    def observe(self, delivery: Delivery) -> None:
        for tensor in (delivery.tensor, delivery.ids):
            if tensor is not None:
                tensor.zero_()
        super().observe(delivery)


class VandalProbe(WatchingProbe):
    """The harness, with an attack that writes over what it observes."""

    def attach(self, session: Session[LocalParties], data: VerticalData) -> None:
        super().attach(session, data)
        self.attack = _Vandal(self.real, self.record)


def test_an_attack_writing_over_its_deliveries_changes_nothing_in_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: the same run watched by an attack that zeroes every delivery during training
    clean = _train(tmp_path / "clean", ATTACKS["label inference by party 2"], monkeypatch)

    # Execute
    vandal = _train(
        tmp_path / "vandal", ATTACKS["label inference by party 2"], monkeypatch, VandalProbe
    )

    # Assert: training went exactly as in the clean run
    assert clean.run is not None and vandal.run is not None
    assert any(d.tensor is not None and not d.tensor.any() for d in vandal.record.deliveries)
    for party in range(3):
        left = clean.run.parties[party].model.state_dict()
        right = vandal.run.parties[party].model.state_dict()
        assert all(torch.equal(left[key], right[key]) for key in left)
    head = (clean.run.trainer.server.head, vandal.run.trainer.server.head)  # type: ignore[attr-defined]
    assert all(
        torch.equal(a, b) for a, b in zip(head[0].parameters(), head[1].parameters(), strict=True)
    )
