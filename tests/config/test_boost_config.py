"""The ``[boost]`` section and ``protocol.name = "secureboost"``: one clear line per bad value,
and a setting the tree trainer does not read (or ``[boost]`` under another protocol) refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shipped.configs import ROOT
from vfl.boost.params import OBJECTIVES
from vfl.config import load_config
from vfl.config.boost import BOOST_OBJECTIVES
from vfl.config.protocols import PROTOCOLS
from vfl.errors import ConfigError

EXAMPLE = ROOT / "examples" / "secureboost_adult.toml"
SECUREBOOST = ["protocol.name=secureboost"]


def test_the_example_loads_as_secureboost_on_three_adult_parties() -> None:
    # Execute
    config = load_config(EXAMPLE)

    # Assert
    assert config.protocol.name == "secureboost"
    assert PROTOCOLS["secureboost"].runner == "trees"
    assert (config.partition.num_parties, config.protocol.active_party) == (3, 1)
    assert config.boost.key_bits >= 2048


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("boost.num_trees=0", "boost.num_trees: must lie in 1..100000, got 0"),
        ("boost.max_depth=31", "boost.max_depth: must lie in 1..30, got 31"),
        ("boost.learning_rate=0", "boost.learning_rate: must lie in (0, 1], got 0.0"),
        ("boost.reg_lambda=-1", "boost.reg_lambda: must be >= 0, got -1.0"),
        ("boost.gamma=-0.5", "boost.gamma: must be >= 0, got -0.5"),
        ("boost.min_child_weight=-1", "boost.min_child_weight: must be >= 0, got -1.0"),
        ("boost.max_bin=1", "boost.max_bin: must lie in 2..4096, got 1"),
        ("boost.objective=multi:softmax", "boost.objective: must be one of"),
        ("boost.base_score=1.5", "boost.base_score: binary:logistic needs a probability"),
        ("boost.key_bits=1024", "boost.key_bits: must lie in 2048..8192, got 1024"),
        ("boost.key_bits=2052", "boost.key_bits: must be a multiple of 8"),
        ("boost.workers=-1", "boost.workers: must lie in 0..1024 (0 = every core), got -1"),
        ("boost.max_bin=nan", "boost.max_bin must be an integer"),
    ],
)
def test_each_bad_boost_value_is_refused_in_one_line_naming_it(override: str, message: str) -> None:
    # Execute
    with pytest.raises(ConfigError) as error:
        load_config(None, [*SECUREBOOST, override])

    # Assert
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    "override",
    [
        "train.optimizer.lr=0.01",
        "train.epochs=3",
        "model.bottom.embedding_dim=8",
        "compress.embedding.name=scalar",
        "privacy.mechanism=pbm",
        "protocol.local_steps=2",
        "attack.name=label_inference",
        "target.metric=test_auc",
    ],
)
def test_a_setting_the_tree_trainer_does_not_read_is_refused_naming_it(override: str) -> None:
    # Prepare
    key = override.partition("=")[0]

    # Execute
    with pytest.raises(ConfigError) as error:
        load_config(None, [*SECUREBOOST, override])

    # Assert
    assert str(error.value).startswith(f"{key}: ")
    assert "protocol 'secureboost' does not read it" in str(error.value)


def test_the_boost_table_under_a_neural_protocol_is_refused() -> None:
    # Execute
    with pytest.raises(ConfigError) as error:
        load_config(None, ["protocol.name=split", "boost.num_trees=4"])

    # Assert
    assert str(error.value).startswith("boost.num_trees: 4 does not apply: [boost] is read only")


def test_the_settings_it_reads_are_accepted() -> None:
    # Execute: a negative control for the refusals above
    config = load_config(
        EXAMPLE,
        ["boost.base_score=0.25", "train.checkpoint=false", "data.max_train_samples=50"],
    )

    # Assert
    assert (config.boost.base_score, config.train.checkpoint) == (0.25, False)


def test_the_config_knows_every_objective_the_trainer_supports() -> None:
    # Assert
    assert BOOST_OBJECTIVES == OBJECTIVES


def test_the_example_is_one_of_the_shipped_configs() -> None:
    # Prepare
    from tests.shipped.configs import shipped_configs

    # Assert: tests/shipped/test_configs.py resolves it with the others
    assert Path(EXAMPLE) in shipped_configs()
