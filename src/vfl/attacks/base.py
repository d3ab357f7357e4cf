"""What an attack is given and what it returns.

An attack sits at one role. It is given, by construction, only:

- the messages its role receives, as that role decodes them (``observe``, fed ``Delivery``
  records by the observers ``vfl.run.observe`` wraps around that role alone);
- its role's own data and model (``PartyKnowledge`` or ``ServerKnowledge``: copies, taken at the
  end of an epoch);
- the auxiliary knowledge its threat model grants, named when it is built (``KnownLabels``: a few
  training labels; ``KnownRows``: some of a party's rows, with their ids).

It returns an ``Inference`` (scores, labels or features for sample ids), which
``vfl.attacks.probe`` scores against the truth that the attack never holds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import nn

from vfl.run.observe import Delivery


@dataclass(frozen=True)
class PartyKnowledge:
    """A party's own: its training rows and a copy of its bottom model as it is now.

    Attributes:
        party: The party's id.
        train_features: Its block of the aligned training split, ``(N, ...)``.
        model: A copy of its bottom model.
        num_classes: The task's number of classes (public: every party trains for it).
    """

    party: int
    train_features: torch.Tensor
    model: nn.Module
    num_classes: int


@dataclass(frozen=True)
class ServerKnowledge:
    """The label holder's own: the training labels and a copy of its head.

    Attributes:
        train_labels: The labels of the aligned training split, ``(N,)``.
        head: A copy of the head model.
        num_classes: The task's number of classes.
    """

    train_labels: torch.Tensor
    head: nn.Module
    num_classes: int


Knowledge = PartyKnowledge | ServerKnowledge


@dataclass(frozen=True)
class KnownLabels:
    """Labels of a few training samples the attacker knows (its threat model's prior)."""

    ids: torch.Tensor
    labels: torch.Tensor


@dataclass(frozen=True)
class KnownRows:
    """Some of a party's training rows the server knows, with their ids (``(n, ...)``)."""

    ids: torch.Tensor
    features: torch.Tensor


@dataclass(frozen=True)
class Grant:
    """What an attack's builder may draw its auxiliary knowledge from (the harness holds it).

    Attributes:
        train_labels: The labels of the aligned training split.
        train_blocks: Each party's block of it, by party id - 1.
        num_classes: The task's number of classes.
        generator: The attack's own random draws (seeded from the run's seed).
    """

    train_labels: torch.Tensor
    train_blocks: tuple[torch.Tensor, ...]
    num_classes: int
    generator: torch.Generator


@dataclass(frozen=True)
class Inference:
    """What an attack concludes about training samples it was not told about.

    Attributes:
        ids: The samples (row positions of the aligned training split).
        scores: Binary tasks: scores by name, higher meaning "more likely positive".
        labels: Inferred labels, or None.
        features: Reconstructed features ``(len(ids), ...)``, or None.
        notes: What the attack saw or could not do, for the summary.
    """

    ids: torch.Tensor
    scores: dict[str, torch.Tensor] = field(default_factory=dict)
    labels: torch.Tensor | None = None
    features: torch.Tensor | None = None
    notes: dict[str, str] = field(default_factory=dict)


class Attack(ABC):
    """An attack by one role: it observes deliveries, then infers from them and its knowledge."""

    name: ClassVar[str] = ""
    role: ClassVar[str] = ""

    def observe(self, delivery: Delivery) -> None:  # noqa: B027 - attacks that need no messages
        """One message delivered to the attacker's role (the default ignores it)."""

    @abstractmethod
    def infer(self, own: Knowledge, *, seed: int) -> Inference:
        """What the attack concludes now, from what it observed and its role's ``own``.

        ``seed`` seeds the attack's own randomness (its models' initialization and batches).
        """

    def state_dict(self) -> dict[str, Any]:
        """What it has gathered, for checkpoints (nothing by default)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:  # noqa: B027 - stateless default
        """Restore ``state_dict()``."""
