"""One family of per-round schedules: a compressor's bits and LVFL's lightweighting ratios."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vfl.compress import scalar_bits_for_error
from vfl.config import load_config
from vfl.errors import ConfigError
from vfl.run import stages
from vfl.schedules import (
    BITS,
    RATIO,
    SCHEDULES,
    Constant,
    Diminishing,
    Linear,
    Steps,
    Table,
    bit_kinds,
    bit_schedule,
    ratio_kinds,
    ratio_schedule,
)

ROUNDS = st.integers(0, 10**6)

RATIO_SPECS: dict[str, dict[str, Any]] = {
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
"""One config table per ratio kind: the contract below runs over all of them."""
BIT_SETTINGS: dict[str, tuple[str, ...]] = {
    "constant": ("bits=3",),
    "steps": ("schedule=steps", "steps=[[0, 2], [10, 4]]"),
    "diminishing": ("schedule=diminishing", "bits=2"),
}
"""One ``[compress.embedding]`` setting per bit kind."""


# --- contract: every registered kind, through the config a run reads ---------------------------


def test_every_registered_kind_has_a_case() -> None:
    assert set(RATIO_SPECS) == set(ratio_kinds())
    assert set(BIT_SETTINGS) == set(bit_kinds())
    assert set(SCHEDULES) == set(RATIO_SPECS) | set(BIT_SETTINGS)


@pytest.mark.parametrize("kind", sorted(BIT_SETTINGS))
def test_every_bit_kind_builds_from_a_compress_table(kind: str) -> None:
    # Prepare
    settings = [f"compress.embedding.{s}" for s in ("name=scalar", *BIT_SETTINGS[kind])]

    # Execute
    config = load_config(None, settings)
    codec = stages.codec(config.compress.embedding)

    # Assert
    assert codec is not None
    assert 1 <= codec.at(0).bits <= 16  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", sorted(RATIO_SPECS))
def test_every_ratio_kind_builds_from_a_lightweight_table(kind: str) -> None:
    # Prepare
    settings = [f"lightweight.alpha.{k}={_toml(v)}" for k, v in RATIO_SPECS[kind].items()]

    # Execute
    config = load_config(None, settings)
    alpha = stages.lightweighting(config, 1).alpha

    # Assert
    assert alpha == ratio_schedule(RATIO_SPECS[kind])


@pytest.mark.parametrize("kind", sorted(RATIO_SPECS))
@given(round=ROUNDS)
def test_every_ratio_schedule_gives_a_ratio_in_zero_one(kind: str, round: int) -> None:
    # Execute
    value = ratio_schedule(RATIO_SPECS[kind]).value_at(round)

    # Assert
    assert isinstance(value, float)
    assert 0.0 <= value < 1.0


@pytest.mark.parametrize("kind", sorted(RATIO_SPECS))
def test_every_schedule_is_frozen_and_equal_when_built_twice(kind: str) -> None:
    # Execute
    first, second = ratio_schedule(RATIO_SPECS[kind]), ratio_schedule(RATIO_SPECS[kind])

    # Assert
    assert first == second
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.value = 0.9  # type: ignore[attr-defined]  # writing is the test


@pytest.mark.parametrize("kind", sorted(RATIO_SPECS))
@pytest.mark.parametrize("round", [-1, 1.5, True, "3"])
def test_every_schedule_refuses_a_bad_round(kind: str, round: object) -> None:
    with pytest.raises(ConfigError, match="round"):
        ratio_schedule(RATIO_SPECS[kind]).value_at(round)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", sorted(RATIO_SPECS))
def test_every_schedule_refuses_unknown_or_missing_keys(kind: str) -> None:
    # Prepare
    extra = {**RATIO_SPECS[kind], "ratio": 0.1}
    missing = {k: v for k, v in RATIO_SPECS[kind].items() if k == "kind"}

    # Execute / Assert
    for spec in (extra, missing):
        with pytest.raises(ConfigError, match=f"alpha: a {kind!r} schedule takes keys"):
            ratio_schedule(spec, name="alpha")


@pytest.mark.parametrize("kind", sorted(RATIO_SPECS))
def test_the_peak_is_the_largest_value_of_the_first_rounds(kind: str) -> None:
    # Prepare
    schedule = ratio_schedule(RATIO_SPECS[kind])

    # Execute / Assert
    assert schedule.peak() == max(schedule.value_at(r) for r in range(100))


# --- bits ----------------------------------------------------------------------------------------


@given(round=ROUNDS)
def test_a_constant_schedule_never_changes(round: int) -> None:
    assert Constant(3, BITS).value_at(round) == 3


def test_steps_apply_from_their_round_on() -> None:
    # Prepare
    schedule = Steps({"100": 3, "0": 2, 250: 4}, BITS)  # type: ignore[arg-type]  # TOML keys

    # Execute
    bits = [schedule.value_at(r) for r in (0, 99, 100, 249, 250, 10**6)]

    # Assert
    assert bits == [2, 2, 3, 3, 4, 4]
    assert schedule.steps == ((0, 2), (100, 3), (250, 4))


@given(round=ROUNDS, initial=st.integers(1, 8))
def test_diminishing_bits_grow_like_a_quarter_of_log2_t(round: int, initial: int) -> None:
    # Execute
    bits = Diminishing(initial=initial).value_at(round)

    # Assert
    assert bits == initial + math.floor(math.log2(round + 1) / 4 + 1e-12)


@given(round=ROUNDS)
def test_diminishing_bits_keep_the_error_times_sqrt_t_bounded(round: int) -> None:
    # Prepare: a quantizer's error is proportional to 2^(-2 b_t)
    schedule = Diminishing(initial=2)

    # Execute
    scaled = 2.0 ** (-2 * schedule.value_at(round)) * math.sqrt(round + 1)

    # Assert
    assert 2.0**-4 <= scaled < 4 * 2.0**-4


def test_diminishing_bits_stop_at_the_cap() -> None:
    assert Diminishing(initial=3, max_bits=4).value_at(10**9) == 4


@given(
    n=st.integers(1, 10**6),
    value_range=st.floats(1e-3, 1e3),
    target=st.floats(1e-6, 1e6),
)
def test_scalar_bits_for_error_is_the_fewest_that_meet_the_target(
    n: int, value_range: float, target: float
) -> None:
    # Execute
    bits = scalar_bits_for_error(num_components=n, value_range=value_range, target=target)

    # Assert
    def error(b: int) -> float:
        return n * (value_range / ((1 << b) - 1)) ** 2 / 12

    assert error(bits) <= target
    assert bits == 1 or error(bits - 1) > target


def test_bit_schedule_builds_each_kind_from_a_links_values() -> None:
    assert bit_schedule("constant", bits=2) == Constant(2, BITS)
    assert bit_schedule("steps", steps=((0, 2), (10, 4))) == Steps(((0, 2), (10, 4)), BITS)
    assert bit_schedule("diminishing", bits=2, max_bits=8) == Diminishing(2, 8)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: bit_schedule("linear"), "unknown bit schedule 'linear'; valid: constant"),
        (lambda: Constant(0, BITS), "bits must be an integer in 1..32, got 0"),
        (lambda: Steps(((5, 2),), BITS), "steps must start at round 0"),
        (lambda: Steps({"zero": 2}, BITS), r"steps must be [round, bits] pairs"),  # type: ignore[arg-type]
        (lambda: Steps(((0, 40),), BITS), "steps[0] must be an integer in 1..32, got 40"),
        (lambda: Diminishing(initial=4, max_bits=3), "max_bits must be an integer in 4..32"),
        (lambda: Constant(2, BITS).value_at(-1), "round must be a non-negative integer, got -1"),
    ],
)
def test_invalid_bit_schedules_are_named(build: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        build()  # type: ignore[operator]
    assert message in str(info.value)


# --- ratios ------------------------------------------------------------------------------------


@given(round=ROUNDS)
def test_a_number_is_a_constant_schedule(round: int) -> None:
    assert ratio_schedule(0.25) == Constant(0.25, RATIO)
    assert ratio_schedule(0.25).value_at(round) == 0.25


def test_ratio_steps_apply_from_their_round_on() -> None:
    # Prepare
    schedule = ratio_schedule(RATIO_SPECS["steps"])

    # Execute
    values = [schedule.value_at(r) for r in (0, 19, 20, 49, 50, 10**6)]

    # Assert
    assert values == [0.0, 0.0, 0.2, 0.2, 0.5, 0.5]
    assert schedule == Steps(((0, 0.0), (20, 0.2), (50, 0.5)), RATIO)


def test_a_linear_ramp_holds_its_ends_and_interpolates_between() -> None:
    # Prepare
    schedule = ratio_schedule(RATIO_SPECS["linear"])

    # Execute
    values = [schedule.value_at(r) for r in (0, 10, 15, 20, 30, 99)]

    # Assert
    assert values == pytest.approx([0.0, 0.0, 0.15, 0.3, 0.6, 0.6])


@given(a=ROUNDS, b=ROUNDS)
def test_an_increasing_ramp_never_decreases(a: int, b: int) -> None:
    # Prepare
    schedule = Linear(start_round=5, end_round=500, start_value=0.1, end_value=0.9)
    early, late = sorted((a, b))

    # Execute / Assert
    assert schedule.value_at(early) <= schedule.value_at(late)


def test_a_table_gives_each_round_its_value_and_then_holds_the_last() -> None:
    # Prepare
    schedule = ratio_schedule(RATIO_SPECS["table"])

    # Execute / Assert
    assert [schedule.value_at(r) for r in range(6)] == [0.0, 0.1, 0.4, 0.2, 0.2, 0.2]
    assert schedule == Table((0.0, 0.1, 0.4, 0.2))


def test_integer_ratios_and_integral_float_rounds_from_config_are_accepted() -> None:
    # Execute
    schedule = ratio_schedule({"kind": "steps", "steps": [[0, 0], [40.0, 0.4]]})

    # Assert
    assert schedule == Steps(((0, 0.0), (40, 0.4)), RATIO)
    assert isinstance(schedule.value_at(0), float)


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
        ({"kind": "diminishing"}, "unknown schedule kind 'diminishing'"),
        ({"value": 0.1}, "unknown schedule kind None"),
        ("steps", "a number or a table"),
        (True, "a number or a table"),
    ],
)
def test_invalid_ratio_specs_raise_config_error_naming_the_value(spec: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ratio_schedule(spec, name="alpha")


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)
