"""Every cross-field rule of the run config raises a ConfigError naming the offending key."""

from __future__ import annotations

import pytest

from tests.extensions.toy_compressor import sign_compressor_registered
from vfl.compress import registry
from vfl.config import ProtocolConfig, RunConfig, load_config
from vfl.config.io import FieldError
from vfl.errors import ConfigError

PBM = ["privacy.mechanism=pbm", "model.head.fusion=sum", "model.bottom.output_activation=tanh"]
EMBEDDING = "compress.embedding"
LATTICE = [f"{EMBEDDING}.name=lattice", f"{EMBEDDING}.bits=2"]

RULES = [
    # sections
    (["data.name=table"], "data.path"),
    (["data.name=table", "data.path=t.csv"], "data.label"),
    (["partition.scheme=halves"], "partition.num_parties"),
    (["partition.scheme=columns", "partition.num_parties=2", "partition.groups=[['a']]"],
     "partition.groups"),
    (["partition.scheme=strips", "partition.groups=[['a']]"], "partition.groups"),
    (["train.optimizer.momentum=0.9"], "train.optimizer.momentum"),
    (["protocol.schedule=sequential", "protocol.labels=shared"], "protocol.schedule"),
    (["target.stop=true"], "target.stop"),
    # compressors and their schedules
    ([*LATTICE, f"{EMBEDDING}.range=fixed", f"{EMBEDDING}.low=1.0", f"{EMBEDDING}.high=0.5"],
     f"{EMBEDDING}.high"),
    ([*LATTICE, f"{EMBEDDING}.schedule=steps"], f"{EMBEDDING}.steps"),
    ([f"{EMBEDDING}.name=gzip"], f"{EMBEDDING}.name"),
    ([f"{EMBEDDING}.name=lattice", f"{EMBEDDING}.bits=9"], f"{EMBEDDING}.bits"),
    ([f"{EMBEDDING}.name=scalar"], f"{EMBEDDING}.bits"),
    ([*LATTICE, f"{EMBEDDING}.schedule=steps", f"{EMBEDDING}.steps=[[0, 2], [50, 12]]"],
     f"{EMBEDDING}.steps"),
    ([*LATTICE, f"{EMBEDDING}.schedule=steps", f"{EMBEDDING}.steps=[[5, 2]]"],
     f"{EMBEDDING}.steps"),
    # LVFL ratio schedules
    (["lightweight.alpha.kind=steps"], "lightweight.alpha.steps"),
    (["lightweight.alpha.kind=table"], "lightweight.alpha.values"),
    (["lightweight.beta.kind=steps", "lightweight.beta.steps=[[5, 0.1]]"],
     "lightweight.beta.steps"),
    (["lightweight.alpha.kind=linear", "lightweight.alpha.start_round=9",
      "lightweight.alpha.end_round=3"], "lightweight.alpha.end_round"),
    (["lightweight.party=[{party = 1}, {party = 1}]"], "lightweight.party"),
    # between sections
    (["privacy.mechanism=pbm", "privacy.secure_aggregation=on"], "model.head.fusion"),
    (["privacy.secure_aggregation=on", "model.head.fusion=sum"], "privacy.secure_aggregation"),
    (["privacy.mechanism=pbm"], "model.head.fusion"),
    (PBM[:2], "model.bottom.output_activation"),
    ([*PBM, "privacy.clip=0.5"], "privacy.clip"),
    ([*PBM, "protocol.labels=shared"], "protocol.labels"),
    ([*PBM, "protocol.schedule=sequential"], "protocol.schedule"),
    ([*PBM, *LATTICE], f"{EMBEDDING}.name"),
    ([*PBM, "protocol.active_party=1"], "protocol.active_party"),
    (["lightweight.beta.value=0.5", f"{EMBEDDING}.name=topk", f"{EMBEDDING}.bits=4"],
     f"{EMBEDDING}.name"),
    ([*PBM, "lightweight.beta.value=0.5"], "lightweight.beta"),
    (["lightweight.prune_at=after_upload"], "lightweight.prune_at"),
    (["lightweight.party=[{party = 9}]"], "lightweight.party"),
    (["protocol.active_party=5"], "protocol.active_party"),
    (["compress.server_model.name=identity"], "compress.server_model.name"),
    (["protocol.labels=shared", "compress.gradient.name=identity"], "compress.gradient.name"),
]  # fmt: skip

VALID = [
    [],
    [f"{EMBEDDING}.name=scalar", f"{EMBEDDING}.bits=4", f"{EMBEDDING}.range=fixed"],
    [*LATTICE, f"{EMBEDDING}.schedule=steps", f"{EMBEDDING}.steps=[[0, 2], [100, 3]]"],
    [*LATTICE, f"{EMBEDDING}.schedule=diminishing"],
    [f"{EMBEDDING}.name=topk", f"{EMBEDDING}.ratio=0.1", f"{EMBEDDING}.per_row=true"],
    ["protocol.labels=shared", *LATTICE, "compress.server_model.name=identity"],
    ["protocol.active_party=4"],
    ["lightweight.alpha.kind=linear", "lightweight.alpha.end_round=10",
     "lightweight.alpha.end_value=0.5"],
    ["lightweight.beta.kind=steps", "lightweight.beta.steps=[[0, 0.0], [40, 0.4]]"],
    [*PBM, "privacy.secure_aggregation=on"],
]  # fmt: skip


@pytest.mark.parametrize(("overrides", "key"), RULES, ids=lambda v: str(v))
def test_each_rule_names_the_offending_key(overrides: list[str], key: str) -> None:
    # Execute
    with pytest.raises(ConfigError) as error:
        load_config(None, overrides)

    # Assert
    assert str(error.value).startswith(f"{key}: "), str(error.value)


@pytest.mark.parametrize("overrides", VALID, ids=lambda v: " ".join(v) or "defaults")
def test_valid_configs_pass_every_rule(overrides: list[str]) -> None:
    assert isinstance(load_config(None, overrides), RunConfig)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["compress.server_model.name=identity"],
            "compress.server_model applies to protocol.labels = 'shared' only",
        ),
        (
            ["protocol.labels=shared", "compress.gradient.name=identity"],
            "compress.gradient applies to protocol.labels = 'private' only; with shared labels"
            " no gradient is sent",
        ),
        (
            ["protocol.active_party=5"],
            "protocol.active_party: 5 is not a party; valid: 1..4 (0: none)",
        ),
        (
            [f"{EMBEDDING}.name=lattice", f"{EMBEDDING}.bits=9"],
            "compress.embedding.bits: the 'lattice' compressor cannot be built: bits must be an"
            " integer in 1..8, got 9",
        ),
    ],
)
def test_rules_that_used_to_fire_after_loading_the_data_keep_their_wording(
    overrides: list[str], message: str
) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(None, overrides)
    assert message in str(error.value)


def test_run_level_rules_name_dotted_keys_when_built_in_python() -> None:
    # Execute
    with pytest.raises(FieldError) as error:
        RunConfig(protocol=ProtocolConfig(active_party=5))

    # Assert
    assert error.value.key == "protocol.active_party"


def test_an_unknown_compressor_lists_the_registered_names() -> None:
    # Execute
    with pytest.raises(ConfigError) as error:
        load_config(None, [f"{EMBEDDING}.name=gzip"])

    # Assert
    message = str(error.value)
    assert "got 'gzip'" in message
    for name in ("none", *registry.available_compressors()):
        assert repr(name) in message


def test_a_newly_registered_compressor_needs_no_config_edit() -> None:
    # Prepare / Execute
    with sign_compressor_registered():
        config = load_config(None, [f"{EMBEDDING}.name=toy_sign", f"{EMBEDDING}.bits=1"])
        with pytest.raises(ConfigError) as error:
            load_config(None, [f"{EMBEDDING}.name=toy_sign", f"{EMBEDDING}.bits=2"])

    # Assert
    assert config.compress.embedding.name == "toy_sign"
    assert str(error.value).startswith("compress.embedding.bits: the 'toy_sign' compressor")
