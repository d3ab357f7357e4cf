"""The attack registry: every registered attack builds through the public config path, and is
covered by the "sees only its role" check without a hand edit.

Built-in attacks are checked by the import-linter contract in ``pyproject.toml``; the tests below
keep that contract's forbidden list equal to the harness's (``vfl.attacks.isolation``) and its
modules equal to those the registered attacks are built from, so that a new registration that
the contract misses fails here. A plug-in's module is checked by the harness itself
(``tests/extensions``).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import torch

from tests.extensions.toy_attack import toy_attack_registered
from vfl.attacks import Attack, build_attack
from vfl.attacks.isolation import FORBIDDEN, check_isolation, forbidden_imports
from vfl.config import load_config
from vfl.config.attack import ATTACKS
from vfl.data.vertical import VerticalData
from vfl.errors import ConfigError
from vfl.results.metrics import Task

PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"
CONTRACT = "Attack algorithms import no role, transport, data or harness"
SHARED = ("vfl.attacks.base", "vfl.attacks.metrics")
"""Modules in the contract that hold no attack of their own (what every attack uses)."""


def _contract() -> dict[str, list[str]]:
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    found: dict[str, list[str]] = next(c for c in contracts if c["name"] == CONTRACT)
    return found


def _data() -> VerticalData:
    generator = torch.Generator().manual_seed(0)
    blocks = tuple(torch.randn(60, 3, generator=generator) for _ in range(3))
    labels = torch.arange(60) % 2
    return VerticalData(blocks, blocks, labels, labels, Task(2))


def _build(name: str) -> Attack:
    role = ATTACKS[name].role
    overrides = [f"attack.name={name}", f"attack.role={role}", "attack.party=2"]
    if role == "party":
        overrides.append("attack.model_completion.labels=6" if name == "model_completion" else "")
    config = load_config(None, [o for o in overrides if o])
    return build_attack(config, _data(), seed=1)


@pytest.mark.parametrize("name", ATTACKS.names())
def test_every_registered_attack_builds_from_its_config(name: str) -> None:
    # Execute
    attack = _build(name)

    # Assert
    assert isinstance(attack, Attack)
    assert attack.name == name
    assert attack.role == ATTACKS[name].role


def test_every_built_in_attack_module_is_in_the_isolation_contract() -> None:
    # Prepare
    contract = _contract()

    # Execute
    modules = {type(_build(name)).__module__ for name in ATTACKS.names()}

    # Assert: the contract lists exactly the attacks' modules and the shared ones
    assert set(contract["source_modules"]) == modules | set(SHARED)
    assert tuple(contract["forbidden_modules"]) == FORBIDDEN


def test_a_plug_in_attack_is_registered_and_built_with_no_other_edit() -> None:
    # Execute
    with toy_attack_registered() as entry:
        attack = _build(entry.name)

    # Assert
    assert type(attack).__module__ == "tests.extensions.toy_attack"
    assert entry.name not in ATTACKS


@pytest.mark.parametrize("module", [*SHARED, "tests.extensions.toy_attack"])
def test_the_attack_modules_import_nothing_forbidden(module: str) -> None:
    # Execute / Assert
    assert forbidden_imports(module) == ()


def test_the_isolation_check_refuses_an_import_of_a_role() -> None:
    # Execute (the negative control: a module that imports vfl.roles.party)
    with pytest.raises(ConfigError) as error:
        check_isolation("tests.extensions.peeking_attack", attack="toy_peeking")

    # Assert
    assert "'vfl.roles.party'" in str(error.value)


def test_an_unknown_attack_lists_the_registered_ones() -> None:
    # Execute
    with pytest.raises(ConfigError) as error:
        load_config(None, ["attack.name=membership"])

    # Assert
    for name in ("none", *ATTACKS.names()):
        assert repr(name) in str(error.value)
