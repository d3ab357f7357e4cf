"""The ``[attack]`` section: one attack on one role of a simulated run (``docs/attacks.md``).

An attack is attached to a party or to the server and sees only what that role receives, its own
data and model, and the auxiliary knowledge its threat model grants (a few labels, or some of a
party's rows). Each attack's own settings live in its sub-table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from vfl.config.fields import Each, Range
from vfl.config.section import Section

AttackName = Literal["none", "label_inference", "model_completion", "feature_reconstruction"]
ATTACK_ROLES: dict[str, str] = {
    "label_inference": "party",
    "model_completion": "party",
    "feature_reconstruction": "server",
}
"""The role each attack runs at."""


@dataclass(frozen=True)
class LabelInferenceConfig(Section):
    """Label inference from the gradients a passive party receives (Li et al., ICLR 2022).

    Attributes:
        known_positives: Direction scoring's reference: the attacker knows the label of this
            many positive training samples and scores every gradient by its cosine with theirs.
        multiclass: ``direct``: with more than two classes, read each sample's label as the
            smallest coordinate of its gradient; it applies when the party's output is its
            share of the logits (``model.head.top = "none"``); ``off`` skips it.
    """

    known_positives: Annotated[int, Range(ge=1)] = 1
    multiclass: Literal["direct", "off"] = "direct"


@dataclass(frozen=True)
class ModelCompletionConfig(Section):
    """Passive model completion (Fu et al., USENIX Security 2022).

    Attributes:
        labels: Training samples whose labels the attacker knows (spread over the classes).
        hidden: Hidden widths of the head it trains on its bottom's embeddings (empty: linear).
        epochs: Full-batch Adam steps on the labelled samples.
        lr: Their learning rate.
    """

    labels: Annotated[int, Range(ge=1)] = 40
    hidden: Annotated[tuple[int, ...], Each(Range(ge=1))] = ()
    epochs: Annotated[int, Range(ge=1)] = 300
    lr: Annotated[float, Range(gt=0)] = 1e-2


@dataclass(frozen=True)
class FeatureReconstructionConfig(Section):
    """An inverse model from what the server receives back to one party's features.

    Attributes:
        aux_fraction: The share of the party's training rows the server knows (with their ids).
        hidden: Hidden widths of the inverse model.
        epochs: Passes of Adam over the auxiliary rows.
        batch_size: Rows per step.
        lr: Adam's learning rate.
    """

    aux_fraction: Annotated[float, Range(gt=0, lt=1)] = 0.1
    hidden: Annotated[tuple[int, ...], Each(Range(ge=1))] = (256,)
    epochs: Annotated[int, Range(ge=1)] = 100
    batch_size: Annotated[int, Range(ge=1)] = 128
    lr: Annotated[float, Range(gt=0)] = 1e-3


@dataclass(frozen=True)
class AttackConfig(Section):
    """One attack on one role, run beside training (``vfl attack``, ``vfl run``, sweeps).

    Attributes:
        name: ``none``; ``label_inference`` or ``model_completion`` (at a party);
            ``feature_reconstruction`` (at the server).
        role: Where the attacker sits: ``party`` or ``server``.
        party: The attacking party (role ``party``), or the party whose features the server
            reconstructs (role ``server``).
        label_inference: Settings of ``label_inference``.
        model_completion: Settings of ``model_completion``.
        feature_reconstruction: Settings of ``feature_reconstruction``.
    """

    name: AttackName = "none"
    role: Literal["party", "server"] = "party"
    party: Annotated[int, Range(ge=1)] = 1
    label_inference: LabelInferenceConfig = field(default_factory=LabelInferenceConfig)
    model_completion: ModelCompletionConfig = field(default_factory=ModelCompletionConfig)
    feature_reconstruction: FeatureReconstructionConfig = field(
        default_factory=FeatureReconstructionConfig
    )
