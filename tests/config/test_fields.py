"""Field constraint markers: what they accept, their message forms, and Section's field checks."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vfl.config import BottomConfig, DataConfig, RunConfig, TrainConfig, load_config
from vfl.config.fields import Distinct, Each, NonEmpty, OneOf, Range, Satisfies
from vfl.config.io import FieldError, from_mapping
from vfl.errors import ConfigError

BOUNDS = st.integers(-1000, 1000)


def values_near(*bounds: float) -> st.SearchStrategy[float]:
    """Floats on, just beside and away from the given bounds."""
    near = [math.nextafter(b, d) for b in bounds for d in (-math.inf, math.inf)]
    return st.sampled_from([*bounds, *near]) | st.floats(-10, 10, allow_nan=False)


@given(low=BOUNDS, value=BOUNDS)
def test_an_inclusive_lower_bound_admits_exactly_the_values_at_or_above_it(
    low: int, value: int
) -> None:
    # Prepare
    bound = Range(ge=low)

    # Execute
    admitted = bound.admits(value)

    # Assert
    assert admitted == (value >= low)
    assert bound.message(value, int) == f"must be >= {low}, got {value}"


@given(low=BOUNDS, width=st.integers(0, 100), offset=st.integers(-3, 103))
def test_an_int_range_reads_low_dot_dot_high(low: int, width: int, offset: int) -> None:
    # Prepare
    high, value = low + width, low + offset
    bound = Range(ge=low, le=high)

    # Execute
    admitted = bound.admits(value)

    # Assert
    assert admitted == (low <= value <= high)
    assert bound.message(value, int) == f"must lie in {low}..{high}, got {value}"


@given(value=values_near(0.0, 1.0))
def test_an_open_interval_excludes_both_ends(value: float) -> None:
    # Prepare
    bound = Range(gt=0, lt=1)

    # Execute
    admitted = bound.admits(value)

    # Assert
    assert admitted == (0 < value < 1)
    assert bound.message(value, float) == f"must lie in (0, 1), got {value!r}"


@given(value=values_near(0.0, 0.25))
def test_a_half_open_interval_includes_only_its_closed_end(value: float) -> None:
    # Prepare
    bound = Range(gt=0, le=0.25)

    # Execute
    admitted = bound.admits(value)

    # Assert
    assert admitted == (0 < value <= 0.25)


@pytest.mark.parametrize(
    ("bound", "hint", "value", "message"),
    [
        (Range(ge=1), int, 0, "must be >= 1, got 0"),
        (Range(gt=0), float, -1.0, "must be > 0, got -1.0"),
        (Range(le=5), int, 6, "must be <= 5, got 6"),
        (Range(lt=5), float, 5.0, "must be < 5, got 5.0"),
        (Range(gt=0, lt=1), float, 1.5, "must lie in (0, 1), got 1.5"),
        (Range(ge=0, lt=1), float, 1.0, "must lie in [0, 1), got 1.0"),
        (Range(ge=0, le=1), float, 2.0, "must lie in [0, 1], got 2.0"),
        (Range(gt=0, le=0.25), float, 0.5, "must lie in (0, 0.25], got 0.5"),
        (Range(ge=1, le=32), int, 40, "must lie in 1..32, got 40"),
        (Range(ge=0, note="0 = all"), int, -1, "must be >= 0 (0 = all), got -1"),
    ],
)
def test_range_messages_say_what_is_valid_and_what_was_given(
    bound: Range, hint: type, value: float, message: str
) -> None:
    # Execute / Assert
    assert not bound.admits(value)
    assert bound.message(value, hint) == message


def test_nan_lies_in_no_range() -> None:
    assert not Range(ge=0).admits(math.nan)
    assert not Range(gt=0, lt=1).admits(math.nan)


@pytest.mark.parametrize("bounds", [{}, {"ge": 0, "gt": 0}, {"le": 1, "lt": 1}])
def test_a_range_needs_one_bound_per_side_at_most_and_at_least_one(
    bounds: dict[str, Any],
) -> None:
    with pytest.raises(TypeError):
        Range(**bounds)


@pytest.mark.parametrize(
    ("constraint", "hint", "value", "message"),
    [
        (
            Each(Range(ge=1), items="widths"),
            tuple[int, ...],
            (4, 0),
            "widths must be >= 1, got [4, 0]",
        ),
        (Each(Range(ge=0)), tuple[float, ...], (-1.0,), "must be >= 0, got [-1.0]"),
        (NonEmpty("must name a data set"), str, "", "must name a data set"),
        (OneOf(("", "a")), str, "b", "must be one of '', 'a'; got 'b'"),
        (Distinct(), tuple[int, ...], (1, 1), "must not repeat, got [1, 1]"),
        (Satisfies(str.isdigit, "must be digits"), str, "x", "must be digits, got 'x'"),
    ],
)
def test_other_markers_reject_with_their_message(
    constraint: Any, hint: Any, value: Any, message: str
) -> None:
    # Execute / Assert
    assert not constraint.admits(value)
    assert constraint.message(value, hint) == message


def test_python_users_get_the_field_check_when_building_sections_directly() -> None:
    # Execute
    with pytest.raises(FieldError) as error:
        RunConfig(train=TrainConfig(epochs=0))

    # Assert
    assert error.value.key == "epochs"
    assert str(error.value) == "epochs: must be >= 1, got 0"
    assert isinstance(error.value, ConfigError)


@pytest.mark.parametrize(
    ("build", "key"),
    [
        (lambda: DataConfig(name=""), "name"),
        (lambda: DataConfig(max_train_samples=-1), "max_train_samples"),
        (lambda: BottomConfig(channels=(16,)), "channels"),
        (lambda: BottomConfig(hidden=(8, 0)), "hidden"),
    ],
)
def test_every_declared_constraint_is_checked(build: Any, key: str) -> None:
    with pytest.raises(FieldError) as error:
        build()
    assert error.value.key == key


def test_from_mapping_still_converts_annotated_fields() -> None:
    # Execute
    train = from_mapping(TrainConfig, {"epochs": 3, "optimizer": {"lr": 1}})
    config = load_config(
        None,
        [
            "model.bottom.hidden=[32, 16]",
            "target.metric=test_accuracy",
            "target.latencies_ms=[1, 2]",
        ],
    )

    # Assert
    assert train.epochs == 3
    assert train.optimizer.lr == 1.0 and isinstance(train.optimizer.lr, float)
    assert config.model.bottom.hidden == (32, 16)
    assert config.target.latencies_ms == (1.0, 2.0)


def test_loaded_values_are_checked_after_conversion() -> None:
    with pytest.raises(ConfigError, match=r"^data\.test_fraction: must lie in \(0, 1\), got 1\.0$"):
        load_config(None, ["data.test_fraction=1"])
