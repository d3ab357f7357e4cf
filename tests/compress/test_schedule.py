from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vfl.compress import (
    ConstantBits,
    DiminishingBits,
    StepBits,
    make_schedule,
    scalar_bits_for_error,
)
from vfl.errors import ConfigError

ROUNDS = st.integers(0, 10**7)


@given(round=ROUNDS)
def test_a_constant_schedule_never_changes(round: int) -> None:
    assert ConstantBits(3).bits_at(round) == 3


def test_steps_apply_from_their_round_on() -> None:
    # Prepare
    schedule = StepBits.from_mapping({"100": 3, "0": 2, 250: 4})

    # Execute
    bits = [schedule.bits_at(r) for r in (0, 99, 100, 249, 250, 10**6)]

    # Assert
    assert bits == [2, 2, 3, 3, 4, 4]
    assert schedule.steps == ((0, 2), (100, 3), (250, 4))


@given(round=ROUNDS, initial=st.integers(1, 8))
def test_diminishing_bits_grow_like_a_quarter_of_log2_t(round: int, initial: int) -> None:
    # Execute
    bits = DiminishingBits(initial=initial).bits_at(round)

    # Assert
    assert bits == initial + math.floor(math.log2(round + 1) / 4 + 1e-12)


@given(round=ROUNDS)
def test_diminishing_bits_keep_the_error_times_sqrt_t_bounded(round: int) -> None:
    # Prepare: ℰ_t ∝ 2^(-2 b_t) for a quantizer (spec section 5.7, check 7)
    schedule = DiminishingBits(initial=2)

    # Execute
    scaled = 2.0 ** (-2 * schedule.bits_at(round)) * math.sqrt(round + 1)

    # Assert
    assert 2.0**-4 <= scaled < 4 * 2.0**-4


def test_diminishing_bits_stop_at_the_cap() -> None:
    assert DiminishingBits(initial=3, max_bits=4).bits_at(10**9) == 4


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


def test_make_schedule_builds_each_kind_from_config_values() -> None:
    assert make_schedule("constant", bits=2) == ConstantBits(2)
    assert make_schedule("steps", steps={"0": 2, "10": 4}) == StepBits(((0, 2), (10, 4)))
    assert make_schedule("diminishing", initial=2, max_bits=8) == DiminishingBits(2, 8)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: make_schedule("linear"), "unknown bit schedule 'linear'; valid: constant"),
        (lambda: make_schedule("constant", bits=2, rate=1), "invalid parameters"),
        (lambda: ConstantBits(0), "bits must be an integer in 1..32, got 0"),
        (lambda: StepBits(((5, 2),)), "steps must start at round 0"),
        (lambda: StepBits.from_mapping({"zero": 2}), "steps must map rounds to bits"),
        (lambda: DiminishingBits(initial=4, max_bits=3), "max_bits must be an integer in 4..32"),
        (lambda: ConstantBits(2).bits_at(-1), "round must be a non-negative integer, got -1"),
    ],
)
def test_invalid_schedules_are_named(build: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        build()  # type: ignore[operator]
    assert message in str(info.value)
