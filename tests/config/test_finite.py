"""No float field of the run config accepts NaN or an infinity; the error names the field."""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vfl.config import RunConfig, load_config
from vfl.config.rules import check_target_metric
from vfl.errors import ConfigError

NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def float_fields(cls: type, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every field of config class ``cls`` that holds floats: dotted key and plain type."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        key = f"{prefix}{field.name}"
        if dataclasses.is_dataclass(hint):
            yield from float_fields(hint, f"{key}.")  # type: ignore[arg-type]
        elif "float" in str(hint):
            yield key, hint


def holding(hint: Any, literal: str) -> str:
    """TOML for a value of type ``hint`` that holds ``literal`` (a number)."""
    if typing.get_origin(hint) is not tuple:
        return literal
    return f"[{holding(typing.get_args(hint)[0], literal)}]"


FLOAT_KEYS = dict(float_fields(RunConfig))


def test_the_float_fields_are_found() -> None:
    # Assert: the enumeration the tests below rely on reaches nested and tuple fields
    assert {
        "train.optimizer.lr",
        "target.value",
        "target.latencies_ms",
        "compress.embedding.low",
        "compress.gradient.high",
        "lightweight.alpha.steps",
        "privacy.delta",
    } <= FLOAT_KEYS.keys()


@pytest.mark.parametrize("key", sorted(FLOAT_KEYS))
@pytest.mark.parametrize("literal", list(NON_FINITE))
def test_a_non_finite_number_is_refused_in_every_float_field(key: str, literal: str) -> None:
    # Prepare
    value = holding(FLOAT_KEYS[key], literal)
    if key.endswith(".steps"):  # [round, ratio] pairs
        value = f"[[0, {literal}]]"

    # Execute / Assert
    with pytest.raises(ConfigError, match=rf"^{key}: must .*finite.*, got .*{literal}"):
        load_config(None, [f"{key}={value}"])


@pytest.mark.parametrize("key", sorted(FLOAT_KEYS))
def test_the_default_of_every_float_field_is_accepted_when_set_explicitly(key: str) -> None:
    # Prepare: the negative control: the same keys with their (finite) defaults
    default = load_config(None)
    value: Any = default
    for part in key.split("."):
        value = getattr(value, part)

    # Execute
    config = load_config(None, [f"{key}={list(value) if isinstance(value, tuple) else value}"])

    # Assert
    assert config == default


@given(value=st.floats(allow_nan=True, allow_infinity=True))
def test_the_learning_rate_accepts_exactly_the_finite_positive_numbers(value: float) -> None:
    # Execute
    try:
        load_config(None, [f"train.optimizer.lr={value!r}"])
        accepted = True
    except ConfigError as error:
        accepted = False
        assert str(error).startswith("train.optimizer.lr: must be ")

    # Assert
    assert accepted == (math.isfinite(value) and value > 0)


@pytest.mark.parametrize("metric", ["test_auc", "test_f1"])
def test_a_binary_metric_is_refused_for_a_task_of_more_classes(metric: str) -> None:
    # Execute / Assert
    with pytest.raises(ConfigError, match=rf"^target.metric: '{metric}' is reported for binary"):
        check_target_metric(metric, 10)


@pytest.mark.parametrize("metric", ["", "test_accuracy", "test_loss", "test_auc", "test_f1"])
def test_every_target_metric_fits_a_binary_task(metric: str) -> None:
    check_target_metric(metric, 2)
