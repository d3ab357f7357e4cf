from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vfl.errors import ConfigError
from vfl.prune import (
    ConstantRatio,
    LinearRatio,
    RatioSchedule,
    StepRatio,
    TableRatio,
    make_party_schedules,
    make_schedule,
)

ROUNDS = st.integers(0, 10**6)

# one config table per kind: the contract suite runs over all of them
SPECS: dict[str, dict[str, Any]] = {
    "constant": {"kind": "constant", "value": 0.3},
    "steps": {"kind": "steps", "steps": [[0, 0.0], [50, 0.5], [20, 0.2]]},
    "linear": {
        "kind": "linear",
        "start_round": 10,
        "end_round": 30,
        "start_value": 0.0,
        "end_value": 0.6,
    },
    "table": {"kind": "table", "values": [0.0, 0.1, 0.4, 0.2]},
}


# --- contract: every schedule kind ------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(SPECS))
@given(round=ROUNDS)
def test_every_schedule_gives_a_ratio_in_zero_one(kind: str, round: int) -> None:
    # Execute
    value = make_schedule(SPECS[kind]).value_at(round)

    # Assert
    assert isinstance(value, float)
    assert 0.0 <= value < 1.0


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_every_schedule_is_frozen_and_equal_when_built_twice(kind: str) -> None:
    # Execute
    first, second = make_schedule(SPECS[kind]), make_schedule(SPECS[kind])

    # Assert
    assert first == second
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.value = 0.9  # type: ignore[attr-defined]  # writing is the test


@pytest.mark.parametrize("kind", sorted(SPECS))
@pytest.mark.parametrize("round", [-1, 1.5, True, "3"])
def test_every_schedule_refuses_a_bad_round(kind: str, round: object) -> None:
    with pytest.raises(ConfigError, match="round"):
        make_schedule(SPECS[kind]).value_at(round)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_every_schedule_refuses_unknown_or_missing_keys(kind: str) -> None:
    # Prepare
    extra = {**SPECS[kind], "ratio": 0.1}
    missing = {k: v for k, v in SPECS[kind].items() if k == "kind"}

    # Execute / Assert
    for spec in (extra, missing):
        with pytest.raises(ConfigError, match=f"alpha: a {kind!r} schedule takes keys"):
            make_schedule(spec, name="alpha")


# --- each kind ---------------------------------------------------------------------------------


@given(round=ROUNDS)
def test_a_number_is_a_constant_schedule(round: int) -> None:
    assert make_schedule(0.25) == ConstantRatio(0.25)
    assert make_schedule(0.25).value_at(round) == 0.25


def test_steps_apply_from_their_round_on() -> None:
    # Prepare
    schedule = make_schedule(SPECS["steps"])

    # Execute
    values = [schedule.value_at(r) for r in (0, 19, 20, 49, 50, 10**6)]

    # Assert
    assert values == [0.0, 0.0, 0.2, 0.2, 0.5, 0.5]
    assert schedule == StepRatio(((0, 0.0), (20, 0.2), (50, 0.5)))


def test_a_linear_ramp_holds_its_ends_and_interpolates_between() -> None:
    # Prepare
    schedule = make_schedule(SPECS["linear"])

    # Execute
    values = [schedule.value_at(r) for r in (0, 10, 15, 20, 30, 99)]

    # Assert
    assert values == pytest.approx([0.0, 0.0, 0.15, 0.3, 0.6, 0.6])


@given(a=ROUNDS, b=ROUNDS)
def test_an_increasing_ramp_never_decreases(a: int, b: int) -> None:
    # Prepare
    schedule = LinearRatio(start_round=5, end_round=500, start_value=0.1, end_value=0.9)
    early, late = sorted((a, b))

    # Execute / Assert
    assert schedule.value_at(early) <= schedule.value_at(late)


def test_a_table_gives_each_round_its_value_and_then_holds_the_last() -> None:
    # Prepare
    schedule = make_schedule(SPECS["table"])

    # Execute / Assert
    assert [schedule.value_at(r) for r in range(6)] == [0.0, 0.1, 0.4, 0.2, 0.2, 0.2]
    assert schedule == TableRatio((0.0, 0.1, 0.4, 0.2))


def test_integer_ratios_and_integral_float_rounds_from_config_are_accepted() -> None:
    # Execute
    schedule = make_schedule({"kind": "steps", "steps": [[0, 0], [40.0, 0.4]]})

    # Assert
    assert schedule == StepRatio(((0, 0.0), (40, 0.4)))
    assert isinstance(schedule.value_at(0), float)


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"kind": "constant", "value": 1.0}, r"alpha: value must be a number in \[0, 1\), got 1.0"),
        ({"kind": "constant", "value": -0.2}, "got -0.2"),
        ({"kind": "constant", "value": "0.5"}, "got '0.5'"),
        ({"kind": "steps", "steps": [[0, 0.0], [50, 1.5]]}, "steps value at round 50"),
        ({"kind": "steps", "steps": [[10, 0.5]]}, "start at round 0"),
        ({"kind": "steps", "steps": [[0, 0.1], [0, 0.5]]}, "distinct rounds"),
        ({"kind": "steps", "steps": [0, 0.5]}, r"\[round, ratio\] pairs"),
        ({"kind": "steps", "steps": [[-1, 0.5]]}, "round must be a non-negative integer"),
        ({"kind": "steps", "steps": [[0, 0.1], [2.5, 0.5]]}, "got 2.5"),
        (
            {
                "kind": "linear",
                "start_round": 5,
                "end_round": 5,
                "start_value": 0.0,
                "end_value": 0.5,
            },
            "end_round must be greater",
        ),
        (
            {
                "kind": "linear",
                "start_round": 0,
                "end_round": 5,
                "start_value": 0.0,
                "end_value": 1.0,
            },
            "end_value",
        ),
        ({"kind": "table", "values": []}, "at least one"),
        ({"kind": "table", "values": [0.1, 2.0]}, r"values\[1\]"),
        ({"kind": "table", "values": 0.5}, "list of ratios"),
        ({"kind": "cosine"}, "unknown schedule kind 'cosine'; valid: constant, steps"),
        ({"value": 0.1}, "unknown schedule kind None"),
        ("steps", "a number or a table"),
        (True, "a number or a table"),
    ],
)
def test_invalid_specs_raise_config_error_naming_the_value(spec: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_schedule(spec, name="alpha")


# --- per party ---------------------------------------------------------------------------------


def test_one_spec_is_shared_by_every_party() -> None:
    # Execute
    schedules = make_party_schedules(SPECS["steps"], num_parties=4, name="alpha")

    # Assert
    assert len(schedules) == 4
    assert len(set(schedules)) == 1


def test_parties_may_each_have_their_own_schedule() -> None:
    # Prepare: a slow device pruned early and hard, a fast one never
    specs: list[dict[str, Any] | float] = [
        {"kind": "steps", "steps": [[0, 0.0], [10, 0.6]]},
        0.0,
        SPECS["table"],
    ]

    # Execute
    schedules: tuple[RatioSchedule, ...] = make_party_schedules(specs, num_parties=3)

    # Assert
    assert [s.value_at(12) for s in schedules] == [0.6, 0.0, 0.2]


def test_a_list_must_have_one_schedule_per_party() -> None:
    with pytest.raises(ConfigError, match="beta: got 2 schedules for 3 parties"):
        make_party_schedules([0.1, 0.2], num_parties=3, name="beta")


def test_a_bad_party_schedule_is_named_by_its_index() -> None:
    with pytest.raises(ConfigError, match=r"beta\[1\]: value must be"):
        make_party_schedules([0.1, 1.2], num_parties=2, name="beta")
