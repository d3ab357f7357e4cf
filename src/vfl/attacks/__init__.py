"""Attacks on a simulated run, each by one role and seeing only what that role receives.

- ``label_inference`` (a passive party): norm and direction scoring of its gradients (Li et al.,
  ICLR 2022), direct inference when its output is its share of the logits;
- ``model_completion`` (a passive party): a head on its own bottom trained with a few labels
  (Fu et al., USENIX Security 2022);
- ``feature_reconstruction`` (the server): an inverse model from what it receives back to one
  party's features, trained on auxiliary rows.

``train`` runs a config with its ``[attack]``; ``docs/attacks.md`` has the threat models and the
measurements.
"""

from vfl.attacks.base import (
    Attack,
    Grant,
    Inference,
    KnownLabels,
    KnownRows,
    PartyKnowledge,
    ServerKnowledge,
)
from vfl.attacks.builders import build_attack
from vfl.attacks.probe import AttackProbe
from vfl.attacks.runner import train

__all__ = [
    "Attack",
    "AttackProbe",
    "Grant",
    "Inference",
    "KnownLabels",
    "KnownRows",
    "PartyKnowledge",
    "ServerKnowledge",
    "build_attack",
    "train",
]
