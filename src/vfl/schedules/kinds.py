"""Every kind of schedule, registered once with the config keys it reads on each domain.

``[compress.*]`` names a bit schedule by ``schedule`` (its ``bits``, ``steps`` and the
compressor's ``max_bits`` build it); ``[lightweight.*]`` names a ratio schedule by ``kind``
(its own keys build it).

- ``constant``, ``steps`` (a value from each listed round on): both domains;
- ``diminishing`` (bits): C-VFL (Castiglia et al., "Compressed-VFL: Communication-Efficient
  Learning with Vertically Partitioned Data", ICML 2022) converges when ``Σ_t η_t·ℰ_t < ∞``
  (Theorem 4.4); replacing ``T`` by the current round ``t`` in its Table 1 makes a quantizer's
  levels grow like ``½·log2(√t)``, so ``ℰ_t = O(1/√t)``;
- ``linear`` and ``table`` (ratios): LVFL leaves how its ratios ``α_k^t`` and ``β_k^t`` are
  chosen open (exogenous inputs); its Figure 3a switches ``α`` on at round 40.

Example:
    >>> [bit_schedule("diminishing", bits=2).value_at(r) for r in (0, 14, 15, 254, 255)]
    [2, 2, 3, 3, 4]
    >>> alpha = ratio_schedule({"kind": "steps", "steps": [[0, 0.0], [40, 0.4]]})
    >>> [alpha.value_at(r) for r in (0, 39, 40, 1000)]
    [0.0, 0.0, 0.4, 0.4]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vfl.errors import ConfigError
from vfl.registry import Registry
from vfl.schedules.values import (
    BITS,
    MAX_BITS,
    RATIO,
    Constant,
    Diminishing,
    Linear,
    Pairs,
    Schedule,
    Steps,
    Table,
)

BitsFrom = Callable[[int, Pairs, int], Schedule[int]]
"""Builds a bit schedule from a link's ``bits``, its ``steps`` and the compressor's cap."""
RatioFrom = Callable[[Mapping[str, Any]], Schedule[float]]
"""Builds a ratio schedule from its config keys."""


@dataclass(frozen=True)
class ScheduleKind:
    """One registered kind of schedule, with what it reads on each domain.

    Attributes:
        name: Its config name.
        bits: How a ``[compress.*]`` link builds it, or ``None`` if it is no bit schedule.
        bit_keys: The ``[compress.*]`` keys it reads.
        ratio: How a ``[lightweight.*]`` table builds it, or ``None`` if it gives no ratios.
        ratio_keys: The ``[lightweight.*]`` keys it reads.
        constant: Whether its value never changes (a link then builds its compressor once).
    """

    name: str
    bits: BitsFrom | None = None
    bit_keys: tuple[str, ...] = ()
    ratio: RatioFrom | None = None
    ratio_keys: tuple[str, ...] = ()
    constant: bool = False


SCHEDULES: Registry[ScheduleKind] = Registry("schedule")
"""Every kind of schedule by name."""


def register_schedule(kind: ScheduleKind) -> ScheduleKind:
    """Add a kind of schedule (its name must be free)."""
    return SCHEDULES.register(kind.name, kind)


for _kind in (
    ScheduleKind(
        "constant",
        bits=lambda bits, steps, cap: Constant(bits, BITS),
        bit_keys=("bits",),
        ratio=lambda keys: Constant(keys["value"], RATIO),
        ratio_keys=("value",),
        constant=True,
    ),
    ScheduleKind(
        "steps",
        bits=lambda bits, steps, cap: Steps(steps, BITS),
        bit_keys=("steps",),
        ratio=lambda keys: Steps(keys["steps"], RATIO),
        ratio_keys=("steps",),
    ),
    ScheduleKind(
        "diminishing", bits=lambda bits, steps, cap: Diminishing(bits, cap), bit_keys=("bits",)
    ),
    ScheduleKind(
        "linear",
        ratio=lambda keys: Linear(**keys),
        ratio_keys=("start_round", "end_round", "start_value", "end_value"),
    ),
    ScheduleKind("table", ratio=lambda keys: Table(_tuple(keys["values"])), ratio_keys=("values",)),
):
    register_schedule(_kind)


def bit_kinds() -> tuple[str, ...]:
    """The kinds a compressor link can follow."""
    return tuple(name for name, kind in SCHEDULES.items() if kind.bits is not None)


def ratio_kinds() -> tuple[str, ...]:
    """The kinds a lightweighting ratio can follow."""
    return tuple(name for name, kind in SCHEDULES.items() if kind.ratio is not None)


def bit_schedule(
    kind: str, *, bits: int = 1, steps: Pairs | Mapping[Any, Any] = (), max_bits: int = MAX_BITS
) -> Schedule[int]:
    """The bit schedule ``kind`` of a link with ``bits``, ``steps`` and a compressor's cap.

    Raises:
        ConfigError: for a kind that gives no bits, or values it refuses (named).
    """
    entry = SCHEDULES.get(kind)
    if entry is None or entry.bits is None:
        raise ConfigError(f"unknown bit schedule {kind!r}; valid: {', '.join(bit_kinds())}")
    return entry.bits(bits, steps, max_bits)  # type: ignore[arg-type]


def ratio_schedule(spec: Mapping[str, Any] | float, *, name: str = "ratio") -> Schedule[float]:
    """A ratio schedule from a TOML-like table (``{"kind": "steps", "steps": [[0, 0.0]]}``).

    A bare number is a constant. Each kind takes exactly its registered keys.

    Raises:
        ConfigError: naming ``name`` and the unknown kind, the missing or unknown keys, or the
            value refused.
    """
    if isinstance(spec, int | float) and not isinstance(spec, bool):
        spec = {"kind": "constant", "value": spec}
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{name}: a schedule is a number or a table with 'kind', got {spec!r}")
    kind = spec.get("kind")
    entry = SCHEDULES.get(kind) if isinstance(kind, str) else None
    if entry is None or entry.ratio is None:
        raise ConfigError(
            f"{name}: unknown schedule kind {kind!r}; valid: {', '.join(ratio_kinds())}"
        )
    keys = {key: value for key, value in spec.items() if key != "kind"}
    if set(keys) != set(entry.ratio_keys):
        raise ConfigError(
            f"{name}: a {kind!r} schedule takes keys {sorted(entry.ratio_keys)}, got {sorted(keys)}"
        )
    try:
        return entry.ratio(keys)
    except ConfigError as error:
        raise ConfigError(f"{name}: {error}") from None


def _tuple(values: object) -> Any:
    """A list from config as a tuple; anything else as given (``Table`` names what is wrong)."""
    return tuple(values) if isinstance(values, list) else values
