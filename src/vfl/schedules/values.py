"""Per-round values: a compressor's bits per component, or LVFL's lightweighting ratios.

A schedule gives a value per round (``value_at``, rounds counted from 0); its values are checked
against a ``Domain``: ``BITS`` (an integer in 1..32) or ``RATIO`` (a fraction removed, in
``[0, 1)``). ``Constant`` and ``Steps`` serve both domains; ``Diminishing`` gives bits,
``Linear`` and ``Table`` ratios. ``vfl.schedules.kinds`` registers each kind by its config name.

Example:
    >>> [Diminishing(initial=2).value_at(r) for r in (0, 14, 15, 254, 255)]
    [2, 2, 3, 3, 4]
    >>> Steps(((0, 0.0), (40, 0.4)), RATIO).value_at(39)
    0.0
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any, Generic, Protocol, TypeVar

from vfl.errors import ConfigError

MAX_BITS = 32
T = TypeVar("T", int, float)
T_co = TypeVar("T_co", covariant=True)
Pairs = tuple[tuple[Any, ...], ...]
"""``(first round, value)`` pairs of a ``Steps`` schedule (as config arrays give them)."""


class Schedule(Protocol[T_co]):
    """Anything that gives a value per round."""

    def value_at(self, round: int) -> T_co:
        """The value for ``round`` (0-based)."""
        ...

    def peak(self) -> T_co:
        """The largest value of any round."""
        ...


def check_bits(value: object, name: str = "bits") -> int:
    """``value`` if it is an integer in ``1..32``; ``ConfigError`` naming ``name`` if not."""
    return check_int(name, value, 1, MAX_BITS)


def check_int(name: str, value: object, low: int, high: int) -> int:
    """``value`` if it is an integer in ``[low, high]``; ``ConfigError`` naming ``name`` if not."""
    if isinstance(value, bool) or not isinstance(value, Integral) or not low <= int(value) <= high:
        raise ConfigError(f"{name} must be an integer in {low}..{high}, got {value!r}")
    return int(value)


def check_ratio(value: object, name: str = "ratio") -> float:
    """``value`` as a float if it is a number in ``[0, 1)``; ``ConfigError`` naming it if not."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value < 1.0:
        raise ConfigError(f"{name} must be a number in [0, 1), got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Domain(Generic[T]):
    """What a schedule's values are: ``bits`` or ``ratio``, with the check of one value."""

    what: str
    check: Callable[[object, str], T]


BITS: Domain[int] = Domain("bits", check_bits)
RATIO: Domain[float] = Domain("ratio", check_ratio)


@dataclass(frozen=True)
class Constant(Generic[T]):
    """The same value every round: ``Constant(3, BITS)``, ``Constant(0.2, RATIO)``."""

    value: T
    domain: Domain[T] = field(compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", self.domain.check(self.value, _name(self.domain)))

    def value_at(self, round: int) -> T:
        """``value``, whatever the round."""
        check_round(round)
        return self.value

    def peak(self) -> T:
        """``value``."""
        return self.value


@dataclass(frozen=True)
class Steps(Generic[T]):
    """A value from each listed round on: ``((0, 2), (100, 3))`` is 2, then 3 from round 100.

    Attributes:
        steps: ``(first round, value)`` pairs with distinct rounds, the first at round 0 (a
            mapping ``{round: value}`` is taken too, as TOML tables give it, with string keys);
            stored sorted by round.
    """

    steps: Pairs
    domain: Domain[T] = field(compare=False, repr=False)

    def __post_init__(self) -> None:
        what = self.domain.what
        pairs = _pairs(self.steps, what)
        checked = sorted(
            (round_, self.domain.check(value, _step_name(self.domain, round_)))
            for round_, value in pairs
        )
        starts = [r for r, _ in checked]
        if not checked or starts[0] != 0 or len(set(starts)) != len(starts):
            shown = list(self.steps.items() if isinstance(self.steps, Mapping) else self.steps)
            raise ConfigError(f"steps must start at round 0 with distinct rounds, got {shown}")
        object.__setattr__(self, "steps", tuple(checked))

    def value_at(self, round: int) -> T:
        """The value of the last step that started at or before ``round``."""
        check_round(round)
        index = bisect.bisect_right([r for r, _ in self.steps], round) - 1
        value: T = self.steps[index][1]
        return value

    def peak(self) -> T:
        """The largest step."""
        value: T = max(v for _, v in self.steps)
        return value


@dataclass(frozen=True)
class Diminishing:
    """Bits that grow with the round: ``b_t = initial + floor(¼·log2 t)``, ``t = round + 1``.

    One more bit each time ``t`` grows 16-fold quarters ``Δ²``, so a quantizer's error
    ``∝ 2^(-2b_t)`` stays within a factor 4 of ``c/√t``: ``ℰ_t·√t`` is bounded.

    Attributes:
        initial: ``b`` at round 0, 1..32.
        max_bits: The cap (the compressor's ``max_bits``: 16 for the scalar quantizer, 8 for
            the lattice, 32 for top-k).
    """

    initial: int
    max_bits: int = MAX_BITS

    def __post_init__(self) -> None:
        check_int("initial", self.initial, 1, MAX_BITS)
        check_int("max_bits", self.max_bits, self.initial, MAX_BITS)

    def value_at(self, round: int) -> int:
        """``min(max_bits, initial + floor(log2(round + 1) / 4))``, in exact integer arithmetic."""
        check_round(round)
        return min(self.max_bits, self.initial + ((round + 1).bit_length() - 1) // 4)

    def peak(self) -> int:
        """``max_bits``, reached eventually."""
        return self.max_bits


@dataclass(frozen=True)
class Linear:
    """A ratio ramp: ``start_value`` up to ``start_round``, ``end_value`` from ``end_round`` on.

    Attributes:
        start_round: Last round at ``start_value``.
        end_round: First round at ``end_value``; greater than ``start_round``.
        start_value: Ratio before and at ``start_round``, in ``[0, 1)``.
        end_value: Ratio at and after ``end_round``, in ``[0, 1)`` (may be below ``start_value``).
    """

    start_round: int
    end_round: int
    start_value: float
    end_value: float

    def __post_init__(self) -> None:
        check_round(self.start_round, "start_round")
        check_round(self.end_round, "end_round")
        if self.end_round <= self.start_round:
            raise ConfigError(
                f"end_round must be greater than start_round, got {self.end_round} <="
                f" {self.start_round}"
            )
        object.__setattr__(self, "start_value", check_ratio(self.start_value, "start_value"))
        object.__setattr__(self, "end_value", check_ratio(self.end_value, "end_value"))

    def value_at(self, round: int) -> float:
        """``v0 + (v1 - v0)·(round - r0)/(r1 - r0)``, with ``round`` clamped to ``[r0, r1]``."""
        check_round(round)
        clamped = min(max(round, self.start_round), self.end_round)
        fraction = (clamped - self.start_round) / (self.end_round - self.start_round)
        return self.start_value + (self.end_value - self.start_value) * fraction

    def peak(self) -> float:
        """The larger end."""
        return max(self.start_value, self.end_value)


@dataclass(frozen=True)
class Table:
    """An explicit ratio per round; rounds past the table keep its last value.

    Attributes:
        values: The ratio of rounds 0, 1, 2, ..., each in ``[0, 1)``; at least one.
    """

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if isinstance(self.values, str | bytes) or not isinstance(self.values, Sequence):
            raise ConfigError(f"values must be a list of ratios, got {self.values!r}")
        if not self.values:
            raise ConfigError("values must hold at least one ratio, got an empty list")
        values = tuple(check_ratio(v, f"values[{i}]") for i, v in enumerate(self.values))
        object.__setattr__(self, "values", values)

    def value_at(self, round: int) -> float:
        """``values[round]``, or the last value for rounds past the table."""
        check_round(round)
        return self.values[min(round, len(self.values) - 1)]

    def peak(self) -> float:
        """The largest entry."""
        return max(self.values)


def check_round(round: object, name: str = "round") -> int:
    """``round`` if it is a non-negative integer; ``ConfigError`` naming ``name`` if not."""
    if isinstance(round, bool) or not isinstance(round, int) or round < 0:
        raise ConfigError(f"{name} must be a non-negative integer, got {round!r}")
    return round


def _pairs(steps: object, what: str) -> list[tuple[int, object]]:
    """``(round, value)`` pairs of a steps table (pairs, or a mapping), rounds as integers."""
    items = steps.items() if isinstance(steps, Mapping) else steps
    try:
        pairs = [(round_, value) for round_, value in items]  # type: ignore[attr-defined]
        rounds = [int(r) if isinstance(r, str) else r for r, _ in pairs]
    except (TypeError, ValueError):
        raise ConfigError(f"steps must be [round, {what}] pairs, got {steps!r}") from None
    return [(_step_round(r), value) for r, (_, value) in zip(rounds, pairs, strict=True)]


def _step_round(round_: object) -> int:
    """A step's round: an integer, or an integral float (TOML arrays of numbers)."""
    if isinstance(round_, float) and round_.is_integer():
        return check_round(int(round_))
    return check_round(round_)


def _name(domain: Domain[Any]) -> str:
    return "bits" if domain is BITS else "value"


def _step_name(domain: Domain[Any], round_: int) -> str:
    return f"steps[{round_}]" if domain is BITS else f"steps value at round {round_}"
