"""The harness: builds one attack at one role, feeds it, and scores it against the truth.

``AttackProbe`` is the ``vfl.run.probe.Probe`` of an attack run. It asks the composition root to
observe the attacker's role only (``taps``), forwards every delivery to the attack, and at the end
of each epoch hands the attack a copy of its role's own data and model and scores what it infers.
The truth (labels, the target party's features) and the composed session stay here: the attack
holds no reference to them.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from vfl.attacks.base import Attack, Inference, Knowledge, PartyKnowledge, ServerKnowledge
from vfl.attacks.builders import build_attack
from vfl.attacks.scoring import Truth, score
from vfl.config import RunConfig
from vfl.data.vertical import VerticalData
from vfl.protocol.loop import ServerLoop
from vfl.run.observe import Delivery, Taps
from vfl.run.session import LocalParties, Session
from vfl.seeding import derive_seed


class AttackProbe:
    """The configured attack (``[attack]``) on one role of a simulated run.

    Args:
        config: The run config; its ``attack`` section names the attack and its role.
    """

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.seed = derive_seed(config.train.seed, "attack")
        self.attack: Attack | None = None
        self._session: Session[LocalParties] | None = None
        self._truth: Truth | None = None
        self._last: dict[str, Any] = {}

    def taps(self) -> Taps:
        """Only the attacker's role is observed."""
        attack = self.config.attack
        if attack.role == "server":
            return Taps(server=self._deliver)
        return Taps(parties={attack.party: self._deliver})

    def _deliver(self, delivery: Delivery) -> None:
        assert self.attack is not None  # built in attach, before any message is sent
        self.attack.observe(delivery)

    def attach(self, session: Session[LocalParties], data: VerticalData) -> None:
        """Build the attack with its auxiliary knowledge; keep the truth for scoring."""
        self._session = session
        self._truth = Truth.of(self.config.attack, data)
        self.attack = build_attack(self.config, data, seed=self.seed)

    def inference(self, epoch: int) -> Inference:
        """What the attack concludes at the end of epoch ``epoch`` (0-based), from what it saw."""
        assert self.attack is not None
        with torch.random.fork_rng(devices=[]):  # the attack never moves the run's own RNG
            return self.attack.infer(self._knowledge(), seed=derive_seed(self.seed, epoch))

    @property
    def truth(self) -> Truth:
        """What the attack is scored against (held here, never by the attack)."""
        assert self._truth is not None, "attach() first"
        return self._truth

    def epoch_metrics(self, epoch: int) -> dict[str, float]:
        """The attack's inference now, scored (``attack_*`` metrics)."""
        inference = self.inference(epoch)
        metrics = score(inference, self.truth)
        self._last = {"epoch": epoch + 1, "metrics": metrics, "notes": inference.notes}
        return metrics

    def _knowledge(self) -> Knowledge:
        """A copy of the attacker's role's own data and model."""
        assert self._session is not None and self._truth is not None
        attack = self.config.attack
        classes = self._truth.num_classes
        if attack.role == "server":
            trainer = self._session.trainer
            assert isinstance(trainer, ServerLoop)
            server = trainer.server
            labels = server.labels[0].clone()
            return ServerKnowledge(labels, copy.deepcopy(server.head), classes)
        party = self._session.parties[attack.party - 1]
        features = party.features[0].clone()
        return PartyKnowledge(attack.party, features, copy.deepcopy(party.model), classes)

    def state_dict(self) -> dict[str, Any]:
        """The attack's gathered observations."""
        assert self.attack is not None
        return self.attack.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the attack's observations."""
        assert self.attack is not None
        self.attack.load_state_dict(state)

    def summarize(self, summary: dict[str, Any]) -> None:
        """The attack's section of ``summary.json``: who attacked whom, its final scores."""
        attack = self.config.attack
        section: dict[str, Any] = {"name": attack.name, "role": attack.role, "party": attack.party}
        section.update(self._last)
        summary["attack"] = section
