"""The toy attack again, from a module that imports a role: the harness must refuse to run it.

The negative control of the isolation check (``vfl.attacks.isolation``): the import below gives
this module a path to another role's objects, which an attack may not have.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tests.extensions.toy_attack import GradientSpread
from vfl.attacks.base import Grant
from vfl.config import RunConfig
from vfl.config.attack import AttackEntry, register_attack, unregister_attack
from vfl.roles.party import Party

NAME = "toy_peeking"
ENTRY = AttackEntry(NAME, "party", f"{__name__}:build")


class PeekingSpread(GradientSpread):
    """``GradientSpread`` that could reach a party (its module imports ``Party``)."""

    name = NAME
    peeks_at = Party


def build(config: RunConfig, grant: Grant) -> PeekingSpread:
    """The attack for the run."""
    return PeekingSpread(len(grant.train_labels))


@contextmanager
def peeking_attack_registered() -> Iterator[AttackEntry]:
    """The peeking attack in the registry for the block, and out of it afterwards."""
    register_attack(ENTRY)
    try:
        yield ENTRY
    finally:
        unregister_attack(NAME)
