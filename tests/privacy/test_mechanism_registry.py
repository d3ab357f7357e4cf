"""The mechanism registry: every registered mechanism builds from its config through the stages
the composition root uses, and its capabilities, not its name, decide what applies."""

from __future__ import annotations

import pytest

from vfl.config import load_config
from vfl.config.mechanisms import MECHANISMS, MechanismEntry, mechanisms_that
from vfl.errors import ConfigError
from vfl.privacy.secure_sum import PartySecureSum
from vfl.protocol.options import ServerPrivacy
from vfl.run import privacy_stages
from vfl.run.stages import protocol_name

FITTING = {
    "sums_only": ("model.head.fusion=sum",),
    "bounded": ("model.bottom.output_activation=tanh",),
}
"""What a mechanism with each capability needs of the model."""


def _overrides(entry: MechanismEntry) -> list[str]:
    needs = [need for flag, keys in FITTING.items() if getattr(entry, flag) for need in keys]
    return [f"privacy.mechanism={entry.name}", *needs]


@pytest.mark.parametrize("name", MECHANISMS.names())
def test_every_registered_mechanism_builds_from_its_config(name: str) -> None:
    # Prepare
    entry = MECHANISMS[name]
    config = load_config(None, _overrides(entry))

    # Execute
    party = privacy_stages.party_privacy(config, 1, deployed=False)
    server = privacy_stages.server_privacy(config, (1, 2), 4)

    # Assert
    assert (party is None) == (not entry.party_stage)
    assert party is None or isinstance(party, PartySecureSum)
    assert (server is None) == (not entry.server_stage)
    assert server is None or isinstance(server, ServerPrivacy)
    assert protocol_name(config) == (entry.protocol or "split")


@pytest.mark.parametrize("name", mechanisms_that("sums_only"))
def test_a_mechanism_that_sends_sums_refuses_concatenation(name: str) -> None:
    # Prepare
    overrides = [o for o in _overrides(MECHANISMS[name]) if "fusion" not in o]

    # Execute
    with pytest.raises(ConfigError) as error:
        load_config(None, [*overrides, "model.head.fusion=concat"])

    # Assert
    assert str(error.value).startswith("model.head.fusion: ")
    assert f"privacy.mechanism {name!r}" in str(error.value)


def test_the_keys_a_mechanism_reads_apply_only_under_it() -> None:
    # Prepare: a key PBM reads, set with no mechanism
    key = MECHANISMS["pbm"].reads[0]

    # Execute
    with pytest.raises(ConfigError) as error:
        load_config(None, [f"privacy.{key}=3"])

    # Assert
    assert str(error.value).startswith(f"privacy.{key}: ")
    assert "mechanism = 'pbm'" in str(error.value)


def test_an_unknown_mechanism_lists_the_registered_ones() -> None:
    # Execute
    with pytest.raises(ConfigError) as error:
        load_config(None, ["privacy.mechanism=laplace"])

    # Assert
    for name in MECHANISMS.names():
        assert repr(name) in str(error.value)
