"""The ``[attack]`` section and the attack registry (``docs/attacks.md``).

An attack is attached to a party or to the server and sees only what that role receives, its own
data and model, and the auxiliary knowledge its threat model grants (a few labels, or some of a
party's rows). Each attack is added by one ``register_attack`` line: its name, the role it runs
at, its settings' sub-table (if it has one) and the ``"module:function"`` that builds it. Config
rules, the applicability table, the harness and ``vfl attack`` read the registry; the harness
also checks, before it runs an attack, that the attack's module imports nothing through which
it could reach past its role (``vfl.attacks.isolation``). The registry is light (no torch): the
builders are named by reference and resolved only by the harness.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Literal, cast

from vfl.config.fields import Each, Range, Registered
from vfl.config.section import Section
from vfl.registry import Registry

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Role = Literal["party", "server"]
NO_ATTACK = "none"
"""The attack name of a run with no attack."""


@dataclass(frozen=True)
class AttackEntry:
    """One attack's registration.

    Attributes:
        name: Its ``attack.name``.
        role: The role it runs at (``party`` or ``server``).
        build: ``"module:function"`` of its builder, called by the harness as
            ``build(config, grant) -> Attack`` (``vfl.attacks.base.Grant``: what the threat
            model may grant it, from which the builder draws its auxiliary knowledge).
        settings: The ``[attack]`` sub-table its settings live in (a field of ``AttackConfig``
            named like the attack), or ``None``: it reads only ``role`` and ``party``.
    """

    name: str
    role: Role
    build: str
    settings: type[Section] | None = None

    def setting_keys(self) -> tuple[str, ...]:
        """Its settings' keys, relative to ``[attack]`` (``label_inference.known_positives``)."""
        if self.settings is None:
            return ()
        fields = dataclasses.fields(cast("type[DataclassInstance]", self.settings))
        return tuple(f"{self.name}.{f.name}" for f in fields)


ATTACKS: Registry[AttackEntry] = Registry("attack", key="attack.name")
"""Every attack by name."""


def register_attack(entry: AttackEntry) -> AttackEntry:
    """Add an attack: after this line ``attack.name = entry.name`` configures and runs it.

    Raises:
        ValueError: if its name is taken or ``none``.
    """
    if entry.name == NO_ATTACK:
        raise ValueError(f"{NO_ATTACK!r} is the name of no attack")
    return ATTACKS.register(entry.name, entry)


def unregister_attack(name: str) -> None:
    """Take an attack out of the registry again (a test's own, after the test)."""
    ATTACKS.remove(name)


def attacks_by(role: str) -> tuple[str, ...]:
    """The registered attacks that run at ``role``."""
    return tuple(name for name, entry in ATTACKS.items() if entry.role == role)


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

    name: Annotated[str, Registered(ATTACKS.names, extra=(NO_ATTACK,))] = NO_ATTACK
    role: Role = "party"
    party: Annotated[int, Range(ge=1)] = 1
    label_inference: LabelInferenceConfig = field(default_factory=LabelInferenceConfig)
    model_completion: ModelCompletionConfig = field(default_factory=ModelCompletionConfig)
    feature_reconstruction: FeatureReconstructionConfig = field(
        default_factory=FeatureReconstructionConfig
    )


BUILDERS = "vfl.attacks.builders"
register_attack(
    AttackEntry("label_inference", "party", f"{BUILDERS}:label_inference", LabelInferenceConfig)
)
register_attack(
    AttackEntry("model_completion", "party", f"{BUILDERS}:model_completion", ModelCompletionConfig)
)
register_attack(
    AttackEntry(
        "feature_reconstruction",
        "server",
        f"{BUILDERS}:feature_reconstruction",
        FeatureReconstructionConfig,
    )
)
