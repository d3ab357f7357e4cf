from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vfl.config import RunConfig, load_config
from vfl.config.io import from_mapping, parse_overrides, read_toml, to_toml
from vfl.errors import ConfigError

EXAMPLES = sorted(Path(__file__).parents[1].joinpath("examples").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_configs_are_valid(path: Path) -> None:
    config = load_config(path)
    assert isinstance(config, RunConfig)


def test_overrides_are_typed_like_toml_values() -> None:
    # Execute
    config = load_config(
        None,
        [
            "train.epochs=3",
            "train.optimizer.lr=1e-2",
            "data.name=adult",
            "model.bottom.hidden=[32, 16]",
            "train.shuffle=false",
        ],
    )

    # Assert
    assert config.train.epochs == 3
    assert config.train.optimizer.lr == 0.01
    assert config.data.name == "adult"
    assert config.model.bottom.hidden == (32, 16)
    assert config.train.shuffle is False


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("train.epcohs=3", r"unknown key 'train.epcohs' \(did you mean 'train.epochs'\?\)"),
        ("trian.epochs=3", "unknown key 'trian'"),
        ("train.lr=3e-3", r"unknown key 'train.lr' \(did you mean 'train.optimizer.lr'\?\)"),
        ("bottom.hidden=[8]", r"unknown key 'bottom' \(did you mean 'model.bottom'\?\)"),
        ('train.epochs="3"', r"train.epochs must be an integer, got '3' \(str\)"),
        ("train.epochs=2.5", "train.epochs must be an integer"),
        ("train.shuffle=1", "train.shuffle must be true or false"),
        ("model.bottom.kind=resnet", "model.bottom.kind must be one of 'mlp', 'cnn'; got 'resnet'"),
        ("train.batch_size=0", "train.batch_size: must be >= 1, got 0"),
        ("train.optimizer.lr=-1", "train.optimizer.lr: must be > 0"),
        ("partition.scheme=halves", "partition.num_parties: scheme 'halves' makes 2 parties"),
        ("model.bottom.hidden=[0]", "model.bottom.hidden: widths must be >= 1"),
        ("model.bottom.hidden=5", "model.bottom.hidden must be an array"),
        ("data.test_fraction=1.5", "data.test_fraction: must lie in"),
        ("train=3", "train must be a table"),
        ("novalue", "must look like section.key=value"),
    ],
)
def test_bad_values_name_the_key_and_what_is_valid(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_table_data_needs_a_path_and_label() -> None:
    with pytest.raises(ConfigError, match=r"data\.path: name='table' needs a file path"):
        load_config(None, ["data.name=table"])


def test_syntax_errors_and_missing_files_are_config_errors(tmp_path: Path) -> None:
    # Prepare
    broken = tmp_path / "broken.toml"
    broken.write_text("[train\nepochs = 3\n")

    # Execute / Assert
    with pytest.raises(ConfigError, match="not valid TOML"):
        read_toml(broken)
    with pytest.raises(ConfigError, match="does not exist"):
        read_toml(tmp_path / "missing.toml")


def test_resolved_config_round_trips_through_toml(tmp_path: Path) -> None:
    # Prepare
    config = load_config(EXAMPLES[0], ["train.epochs=2"])
    path = tmp_path / "config.toml"

    # Execute
    path.write_text(to_toml(config))

    # Assert
    assert load_config(path) == config


@given(number=st.integers(-(2**40), 2**40))
def test_integer_overrides_parse_as_integers(number: int) -> None:
    assert parse_overrides([f"a.b={number}"]) == {"a": {"b": number}}


@given(
    word=st.text(alphabet="abcdefghijklmnopqrstuvwxyz-_", min_size=1, max_size=12).filter(
        lambda w: w not in {"true", "false", "inf", "nan"}
    )
)
def test_bare_words_fall_back_to_strings(word: str) -> None:
    assert parse_overrides([f"a.b={word}"]) == {"a": {"b": word}}


def test_from_mapping_rejects_a_wrong_section_type() -> None:
    with pytest.raises(ConfigError, match="data must be a table"):
        from_mapping(RunConfig, {"data": [1, 2]})


def test_config_reference_is_up_to_date() -> None:
    # Prepare
    root = Path(__file__).parents[1]
    spec = importlib.util.spec_from_file_location(
        "gen_config_doc", root / "tools/gen_config_doc.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    # Execute / Assert
    assert (root / "docs/config.md").read_text() == module.render(), (
        "docs/config.md is stale: run .venv/bin/python tools/gen_config_doc.py > docs/config.md"
    )
