"""An attack defined and registered here, outside the package: one ``register_attack`` line.

``GradientSpread`` is a party attack that scores each training sample by the largest absolute
coordinate of the gradient its party received for it (a cruder cousin of norm scoring).
Registering it is the only step: ``attack.name = "toy_spread"`` then configures it, ``vfl attack``
runs it, and the harness checks that this module imports nothing past its role.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from vfl.attacks.base import Attack, Grant, Inference, Knowledge
from vfl.attacks.label_inference import GRADIENTS
from vfl.config import RunConfig
from vfl.config.attack import AttackEntry, register_attack, unregister_attack
from vfl.run.observe import Delivery

NAME = "toy_spread"
ENTRY = AttackEntry(NAME, "party", f"{__name__}:build")
"""The attack's whole registration: its name, its role and its builder."""


class GradientSpread(Attack):
    """Scores every sample seen by ``max |g_i|`` of its latest gradient."""

    name = NAME
    role = "party"

    def __init__(self, rows: int) -> None:
        self.spread = torch.full((rows,), torch.nan, dtype=torch.float64)

    def observe(self, delivery: Delivery) -> None:
        """Score the samples of every gradient the party receives."""
        if delivery.kind not in GRADIENTS or delivery.tensor is None or delivery.ids is None:
            return
        self.spread[delivery.ids] = delivery.tensor.to(torch.float64).abs().amax(dim=1)

    def infer(self, own: Knowledge, *, seed: int) -> Inference:
        """The score of every sample seen."""
        ids = torch.nonzero(~torch.isnan(self.spread)).flatten()
        return Inference(ids, scores={"spread": self.spread[ids]})

    def state_dict(self) -> dict[str, Any]:
        """Every sample's latest score."""
        return {"spread": self.spread}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict()``."""
        self.spread = state["spread"]


def build(config: RunConfig, grant: Grant) -> GradientSpread:
    """The attack for the run: it needs no auxiliary knowledge."""
    return GradientSpread(len(grant.train_labels))


@contextmanager
def toy_attack_registered() -> Iterator[AttackEntry]:
    """The toy attack in the registry for the block, and out of it afterwards."""
    register_attack(ENTRY)
    try:
        yield ENTRY
    finally:
        unregister_attack(NAME)
