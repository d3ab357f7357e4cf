"""Bits per component over rounds: constant, explicit steps, or diminishing compression error.

C-VFL [ICML] Theorem 4.4 converges when ``Σ_t η_t·ℰ_t < ∞``; the paper's section 4 ("Common
Compressors", Table 1) and spec ``cvfl.md`` section 5.6 give the recipe: replace ``T`` by the
current round ``t`` in Table 1, so the quantizer's ``q_t`` grows like ``½·log2(√t) + const`` and
``ℰ_t = O(1/√t)``. Every compressor here is parametrized by ``b``, so one schedule drives all of
them: more quantization levels (scalar), a smaller cell volume ``V ∝ 2^(-2b)`` (lattice) or more
components sent (top-k). Rounds are counted from 0; the paper's ``t`` is ``round + 1``.

Example:
    >>> [DiminishingBits(initial=2).bits_at(r) for r in (0, 14, 15, 254, 255)]
    [2, 2, 3, 3, 4]
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from vfl.compress.base import check_int
from vfl.errors import ConfigError

MAX_BITS = 32


class BitSchedule(Protocol):
    """Anything that gives the bits per component of a round."""

    def bits_at(self, round: int) -> int:
        """Bits per component ``b`` for ``round`` (0-based)."""
        ...


@dataclass(frozen=True)
class ConstantBits:
    """The same ``b`` every round (the paper's experiments).

    Attributes:
        bits: Bits per component, 1..32.
    """

    bits: int

    def __post_init__(self) -> None:
        check_int("bits", self.bits, 1, MAX_BITS)

    def bits_at(self, round: int) -> int:
        """``bits``, whatever the round."""
        _check_round(round)
        return self.bits


@dataclass(frozen=True)
class StepBits:
    """``b`` changing at given rounds: ``steps = ((0, 2), (100, 3))`` is 2 bits, then 3 from 100.

    Attributes:
        steps: ``(first round, bits)`` pairs; the first must start at round 0.
    """

    steps: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        try:
            steps = tuple(sorted((_as_int(r), _as_int(b)) for r, b in self.steps))
        except (TypeError, ValueError):
            raise ConfigError(f"steps must be (round, bits) pairs, got {self.steps!r}") from None
        starts = [r for r, _ in steps]
        if not steps or starts[0] != 0 or len(set(starts)) != len(starts):
            raise ConfigError(
                f"steps must start at round 0 with distinct rounds, got {list(self.steps)}"
            )
        for start, bits in steps:
            check_int(f"steps[{start}]", bits, 1, MAX_BITS)
        object.__setattr__(self, "steps", steps)

    @classmethod
    def from_mapping(cls, steps: Mapping[int | str, int]) -> StepBits:
        """From ``{round: bits}`` (TOML tables have string keys: ``{"0" = 2, "100" = 3}``)."""
        try:
            pairs = tuple((_as_int(r), _as_int(b)) for r, b in steps.items())
        except (TypeError, ValueError):
            raise ConfigError(f"steps must map rounds to bits, got {dict(steps)!r}") from None
        return cls(pairs)

    def bits_at(self, round: int) -> int:
        """The bits of the last step that started at or before ``round``."""
        _check_round(round)
        starts = [r for r, _ in self.steps]
        return self.steps[bisect.bisect_right(starts, round) - 1][1]


@dataclass(frozen=True)
class DiminishingBits:
    """The paper's recipe: ``b_t = initial + floor(¼·log2 t)`` with ``t = round + 1``, capped.

    One more bit each time ``t`` grows 16-fold quarters ``Δ²``, so the error ``∝ 2^(-2b_t)``
    stays within a factor 4 of ``c/√t``: ``ℰ_t·√t`` is bounded (spec section 5.7, check 7).

    Attributes:
        initial: ``b`` at round 0, 1..32.
        max_bits: The cap (16 for the scalar quantizer, 8 for the lattice, 32 for top-k).
    """

    initial: int
    max_bits: int = MAX_BITS

    def __post_init__(self) -> None:
        check_int("initial", self.initial, 1, MAX_BITS)
        check_int("max_bits", self.max_bits, self.initial, MAX_BITS)

    def bits_at(self, round: int) -> int:
        """``min(max_bits, initial + floor(log2(round + 1) / 4))``, in exact integer arithmetic."""
        _check_round(round)
        return min(self.max_bits, self.initial + ((round + 1).bit_length() - 1) // 4)


SCHEDULES: dict[str, type[ConstantBits] | type[StepBits] | type[DiminishingBits]] = {
    "constant": ConstantBits,
    "steps": StepBits,
    "diminishing": DiminishingBits,
}


def make_schedule(kind: str, **params: Any) -> BitSchedule:
    """A schedule by name: ``constant`` (bits), ``steps`` (steps), ``diminishing`` (initial...).

    Raises:
        ConfigError: for an unknown kind or invalid parameters.
    """
    if kind not in SCHEDULES:
        raise ConfigError(f"unknown bit schedule {kind!r}; valid: {', '.join(SCHEDULES)}")
    if kind == "steps" and isinstance(params.get("steps"), Mapping):
        return StepBits.from_mapping(params["steps"])
    try:
        schedule: BitSchedule = SCHEDULES[kind](**params)
    except TypeError:
        raise ConfigError(f"invalid parameters for the {kind!r} schedule: {params}") from None
    return schedule


def scalar_bits_for_error(*, num_components: int, value_range: float, target: float) -> int:
    """Fewest bits whose dithered scalar quantizer has expected error ``ℰ <= target``.

    [ICML] Table 1 inverted exactly (spec section 5.5) for this package's levels: with
    ``n`` components, ``ℰ = n·Δ²/12`` and ``Δ = range / (2^b - 1)``, so
    ``b = ceil(log2(1 + range·sqrt(n / (12·target))))``. For a diminishing error use
    ``target = c/√t``.

    Raises:
        ConfigError: if an argument is not positive.
    """
    if num_components < 1 or not value_range > 0 or not target > 0:
        raise ConfigError(
            f"need num_components >= 1, value_range > 0 and target > 0, got {num_components},"
            f" {value_range}, {target}"
        )
    bits = max(
        1, math.ceil(math.log2(1.0 + value_range * math.sqrt(num_components / (12 * target))))
    )
    while bits > 1 and _scalar_error(num_components, value_range, bits - 1) <= target:
        bits -= 1  # guard against log2 rounding up past an exact fit
    while _scalar_error(num_components, value_range, bits) > target:
        bits += 1
    return bits


def _scalar_error(num_components: int, value_range: float, bits: int) -> float:
    return num_components * (value_range / ((1 << bits) - 1)) ** 2 / 12.0


def _as_int(value: object) -> int:
    """An integer, or a string of one (TOML keys); ``ValueError`` for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(value)
    return int(value)


def _check_round(round: int) -> None:
    if isinstance(round, bool) or not isinstance(round, int) or round < 0:
        raise ConfigError(f"round must be a non-negative integer, got {round!r}")
