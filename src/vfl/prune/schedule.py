"""Per-party, per-round lightweighting ratios from plain config values.

LVFL (spec ``fedbcd-lvfl.md`` sections 2.1 and 3.1; paper section III) gives each client ``k`` a
computation ratio ``α_k^t`` (fraction of filters/neurons pruned) and a communication ratio
``β_k^t`` (fraction of embedding entries zeroed) per global round ``t``; both are fractions
REMOVED, in ``[0, 1)`` here (0 means "no lightweighting"). How they are chosen is left open
(exogenous inputs), so a schedule is one of: a constant, step changes at given rounds (the
paper's Fig. 3a switches ``α`` on at ``t = 40``), a linear ramp, or an explicit per-round table;
parties may share one schedule or each have their own. Rounds are counted from 0.

Example:
    >>> alpha = make_schedule({"kind": "steps", "steps": [[0, 0.0], [40, 0.4]]})
    >>> [alpha.value_at(r) for r in (0, 39, 40, 1000)]
    [0.0, 0.0, 0.4, 0.4]
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol

from vfl.errors import ConfigError
from vfl.prune.structured import check_ratio


class RatioSchedule(Protocol):
    """Anything that gives a lightweighting ratio per round."""

    def value_at(self, round: int) -> float:
        """The ratio, in ``[0, 1)``, for ``round`` (0-based)."""
        ...


@dataclass(frozen=True)
class ConstantRatio:
    """The same ratio every round.

    Attributes:
        value: The ratio, in ``[0, 1)``.
    """

    value: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", check_ratio(self.value, "value"))

    def value_at(self, round: int) -> float:
        """``value``, whatever the round."""
        _check_round(round)
        return self.value


@dataclass(frozen=True)
class StepRatio:
    """A ratio that changes at given rounds: ``((0, 0.0), (50, 0.5))`` is 0, then 0.5 from 50.

    Attributes:
        steps: ``(first round, ratio)`` pairs with distinct rounds, the first at round 0
            (stored sorted by round; a round may be an integral float such as ``50.0``, as
            arrays of numbers read from config are).
    """

    steps: tuple[tuple[int, float], ...]

    def __post_init__(self) -> None:
        try:
            pairs = [(round_, value) for round_, value in self.steps]
        except (TypeError, ValueError):
            raise ConfigError(f"steps must be [round, ratio] pairs, got {self.steps!r}") from None
        steps = tuple(
            sorted((_step_round(r), check_ratio(v, f"steps value at round {r}")) for r, v in pairs)
        )
        starts = [r for r, _ in steps]
        if not steps or starts[0] != 0 or len(set(starts)) != len(starts):
            raise ConfigError(
                f"steps must start at round 0 with distinct rounds, got {list(self.steps)}"
            )
        object.__setattr__(self, "steps", steps)

    def value_at(self, round: int) -> float:
        """The ratio of the last step that started at or before ``round``."""
        _check_round(round)
        index = bisect.bisect_right([r for r, _ in self.steps], round) - 1
        return self.steps[index][1]


@dataclass(frozen=True)
class LinearRatio:
    """A linear ramp: ``start_value`` up to ``start_round``, ``end_value`` from ``end_round`` on.

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
        _check_round(self.start_round, "start_round")
        _check_round(self.end_round, "end_round")
        if self.end_round <= self.start_round:
            raise ConfigError(
                f"end_round must be greater than start_round, got {self.end_round} <="
                f" {self.start_round}"
            )
        object.__setattr__(self, "start_value", check_ratio(self.start_value, "start_value"))
        object.__setattr__(self, "end_value", check_ratio(self.end_value, "end_value"))

    def value_at(self, round: int) -> float:
        """The ramp's value: ``v0 + (v1 - v0)·(round - r0)/(r1 - r0)``, clamped to ``[r0, r1]``.

        ``r0, r1`` are ``start_round, end_round`` and ``v0, v1`` ``start_value, end_value``.
        """
        _check_round(round)
        clamped = min(max(round, self.start_round), self.end_round)
        fraction = (clamped - self.start_round) / (self.end_round - self.start_round)
        return self.start_value + (self.end_value - self.start_value) * fraction


@dataclass(frozen=True)
class TableRatio:
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
        _check_round(round)
        return self.values[min(round, len(self.values) - 1)]


_Schedule = ConstantRatio | StepRatio | LinearRatio | TableRatio

SCHEDULES: dict[str, type[_Schedule]] = {
    "constant": ConstantRatio,
    "steps": StepRatio,
    "linear": LinearRatio,
    "table": TableRatio,
}

ScheduleSpec = Mapping[str, Any] | float
"""A schedule in config: a number (a constant) or a table with ``kind`` and its fields."""


def make_schedule(spec: ScheduleSpec, *, name: str = "ratio") -> RatioSchedule:
    """A schedule from a TOML-like table: ``{"kind": "steps", "steps": [[0, 0.0], [50, 0.5]]}``.

    Kinds and their keys: ``constant`` (``value``), ``steps`` (``steps``: ``[round, ratio]``
    pairs), ``linear`` (``start_round``, ``end_round``, ``start_value``, ``end_value``),
    ``table`` (``values``). A bare number is a constant.

    Args:
        spec: The table, or a number.
        name: What the schedule is for (``"alpha"``), to name it in errors.

    Raises:
        ConfigError: for an unknown kind, missing or unknown keys, or invalid values.
    """
    if isinstance(spec, int | float) and not isinstance(spec, bool):
        return _build(name, ConstantRatio, {"value": spec})
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{name}: a schedule is a number or a table with 'kind', got {spec!r}")
    kind = spec.get("kind")
    if kind not in SCHEDULES:
        raise ConfigError(f"{name}: unknown schedule kind {kind!r}; valid: {', '.join(SCHEDULES)}")
    cls = SCHEDULES[kind]
    params = {key: value for key, value in spec.items() if key != "kind"}
    expected = {field.name for field in fields(cls)}
    if set(params) != expected:
        raise ConfigError(
            f"{name}: a {kind!r} schedule takes keys {sorted(expected)}, got {sorted(params)}"
        )
    if kind == "steps":
        params["steps"] = _pairs(name, params["steps"])
    if kind == "table" and isinstance(params["values"], list):
        params["values"] = tuple(params["values"])
    return _build(name, cls, params)


def make_party_schedules(
    spec: ScheduleSpec | Sequence[ScheduleSpec], *, num_parties: int, name: str = "ratio"
) -> tuple[RatioSchedule, ...]:
    """One schedule per party: a single spec shared by all, or a list with one spec per party.

    Raises:
        ConfigError: if a list does not hold exactly ``num_parties`` specs, or a spec is invalid.
    """
    if isinstance(spec, Sequence) and not isinstance(spec, str):
        if len(spec) != num_parties:
            raise ConfigError(
                f"{name}: got {len(spec)} schedules for {num_parties} parties; give one shared"
                " schedule or exactly one per party"
            )
        return tuple(make_schedule(s, name=f"{name}[{k}]") for k, s in enumerate(spec))
    return (make_schedule(spec, name=name),) * num_parties


def _build(name: str, cls: type[_Schedule], params: dict[str, Any]) -> RatioSchedule:
    try:
        return cls(**params)
    except ConfigError as error:
        raise ConfigError(f"{name}: {error}") from None


def _pairs(name: str, steps: object) -> tuple[tuple[int, float], ...]:
    if not isinstance(steps, Sequence) or not all(
        isinstance(pair, Sequence) and len(pair) == 2 for pair in steps
    ):
        raise ConfigError(f"{name}: steps must be a list of [round, ratio] pairs, got {steps!r}")
    return tuple((pair[0], pair[1]) for pair in steps)


def _step_round(round: object) -> int:
    if isinstance(round, float) and round.is_integer():
        return _check_round(int(round))
    return _check_round(round)


def _check_round(round: object, name: str = "round") -> int:
    if isinstance(round, bool) or not isinstance(round, int) or round < 0:
        raise ConfigError(f"{name} must be a non-negative integer, got {round!r}")
    return round
