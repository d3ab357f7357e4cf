"""The built-in attacks' builders, and ``build_attack``, which runs the registered one.

A builder draws the auxiliary knowledge its attack's threat model grants (a few labels, some of a
party's rows) from a ``Grant`` and builds the attack with it; the attack registry
(``vfl.config.attack``) names each builder.
"""

from __future__ import annotations

import torch

from vfl.attacks.base import Attack, Grant, KnownLabels, KnownRows
from vfl.attacks.completion import ModelCompletion
from vfl.attacks.isolation import check_isolation
from vfl.attacks.label_inference import LabelInference
from vfl.attacks.reconstruction import FeatureReconstruction
from vfl.config import RunConfig
from vfl.config.attack import ATTACKS
from vfl.data.vertical import VerticalData
from vfl.errors import ConfigError
from vfl.registry import resolve


def build_attack(config: RunConfig, data: VerticalData, *, seed: int) -> Attack:
    """The configured attack, built by its registered builder (auxiliary draws from ``seed``).

    Raises:
        ConfigError: if the attack does not apply to this task and model, its auxiliary
            knowledge would leave no sample to attack (naming the key and the data's count), its
            builder cannot be imported, or its module imports past its role.
    """
    entry = ATTACKS[config.attack.name]
    build = resolve(entry.build)
    if not callable(build):
        raise ConfigError(f"attack {entry.name!r}: {entry.build!r} is not a function")
    grant = Grant(
        train_labels=data.train_labels,
        train_blocks=tuple(data.train_blocks),
        num_classes=data.task.num_classes,
        generator=torch.Generator().manual_seed(seed),
    )
    attack = build(config, grant)
    if not isinstance(attack, Attack):
        raise ConfigError(f"attack {entry.name!r}: {entry.build!r} built {attack!r}, not an Attack")
    check_isolation(type(attack).__module__, attack=entry.name)
    return attack


def label_inference(config: RunConfig, grant: Grant) -> LabelInference:
    """Label inference at a passive party, knowing ``known_positives`` positive labels."""
    settings, labels, classes = config.attack.label_inference, grant.train_labels, grant.num_classes
    _check_label_inference(config, classes)
    _check_known_positives(settings.known_positives, labels, classes)
    known = _known_positives(labels, settings.known_positives, grant.generator)
    direct = settings.multiclass == "direct"
    return LabelInference(len(labels), known, num_classes=classes, direct=direct)


def model_completion(config: RunConfig, grant: Grant) -> ModelCompletion:
    """Model completion at a passive party, knowing ``labels`` stratified labels."""
    completion, labels = config.attack.model_completion, grant.train_labels
    if completion.labels >= len(labels):
        raise ConfigError(
            f"attack.model_completion.labels = {completion.labels} leaves no training sample"
            f" to attack: the training split has {len(labels)} rows; give at most"
            f" {len(labels) - 1}"
        )
    return ModelCompletion(
        _stratified(labels, completion.labels, grant.num_classes, grant.generator),
        hidden=completion.hidden,
        epochs=completion.epochs,
        lr=completion.lr,
    )


def feature_reconstruction(config: RunConfig, grant: Grant) -> FeatureReconstruction:
    """Feature reconstruction at the server, knowing ``aux_fraction`` of the party's rows."""
    attack, settings = config.attack, config.attack.feature_reconstruction
    block = grant.train_blocks[attack.party - 1]
    count = max(1, round(settings.aux_fraction * len(block)))
    ids = torch.randperm(len(block), generator=grant.generator)[:count].sort().values
    return FeatureReconstruction(
        attack.party,
        len(block),
        KnownRows(ids, block[ids].clone()),
        hidden=settings.hidden,
        epochs=settings.epochs,
        batch_size=settings.batch_size,
        lr=settings.lr,
    )


def _check_label_inference(config: RunConfig, classes: int) -> None:
    head, width = config.model.head, config.model.bottom.embedding_dim
    logits = head.top == "none" and width == classes
    if classes > 2 and not (logits and config.attack.label_inference.multiclass == "direct"):
        raise ConfigError(
            f"attack.name: label_inference on a {classes}-class task applies only when each"
            " party's output is its share of the logits (model.head.top = 'none',"
            f" model.bottom.embedding_dim = {classes}) with attack.label_inference.multiclass ="
            " 'direct'; make the task binary (data.positive_classes) or use model_completion"
        )


def _check_known_positives(count: int, labels: torch.Tensor, classes: int) -> None:
    """A binary task must keep a positive sample the attacker does not know, to score."""
    positives = int((labels == 1).sum())
    if classes == 2 and count >= positives:
        fix = f"give at most {positives - 1}" if positives > 1 else "it needs at least two"
        raise ConfigError(
            f"attack.label_inference.known_positives = {count} leaves no positive training sample"
            f" to attack: the training split has {positives} positive rows; {fix}"
        )


def _known_positives(labels: torch.Tensor, count: int, generator: torch.Generator) -> KnownLabels:
    positives = torch.nonzero(labels == 1).flatten()
    if len(positives) == 0:  # multiclass direct inference needs no reference
        return KnownLabels(torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.int64))
    chosen = positives[torch.randperm(len(positives), generator=generator)[:count]].sort().values
    return KnownLabels(chosen, labels[chosen].clone())


def _stratified(
    labels: torch.Tensor, count: int, classes: int, generator: torch.Generator
) -> KnownLabels:
    """``count`` labelled samples spread over the classes (round robin over shuffled classes)."""
    pools = [
        torch.nonzero(labels == c).flatten()[
            torch.randperm(int((labels == c).sum()), generator=generator)
        ]
        for c in range(classes)
    ]
    chosen: list[int] = []
    taken = [0] * classes
    while len(chosen) < min(count, len(labels)):
        for c in range(classes):
            if len(chosen) < count and taken[c] < len(pools[c]):
                chosen.append(int(pools[c][taken[c]]))
                taken[c] += 1
    ids = torch.tensor(sorted(chosen), dtype=torch.int64)
    return KnownLabels(ids, labels[ids].clone())
