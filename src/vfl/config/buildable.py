"""Build what a config section describes once, so that what cannot be built fails at load time.

A compressor, its bit schedule and a ratio schedule are built by the same registries the run
uses (``vfl.compress.registry``, ``vfl.compress.schedule``, ``vfl.prune``); their
``ConfigError`` is re-raised as a ``FieldError`` naming the config key. The registries import
torch, so they are imported here lazily: callers (``vfl.config.rules``) call these only for
settings other than the defaults.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

from vfl.config.io import FieldError
from vfl.config.stages import CompressorConfig, RatioScheduleConfig
from vfl.errors import ConfigError

NO_COMPRESSOR = "none"
"""The compressor name for plain float32 tensors (no compressor in the registry)."""

RATIO_KEYS = {"steps": "steps", "linear": "end_round", "table": "values"}
"""The key blamed when a ratio schedule of each kind cannot be built (its fields' own ranges
are declared, so what is left is the steps' order, a ramp's direction, a table's entries)."""


def registered_compressors() -> tuple[str, ...]:
    """``none`` and every name in the compressor registry."""
    from vfl.compress.registry import available_compressors

    return (NO_COMPRESSOR, *available_compressors())


def compressor_parameters(
    link: CompressorConfig, bits: int, accepted: Collection[str]
) -> dict[str, Any]:
    """The registry parameters of a link at ``bits`` bits per component.

    ``bits``, ``per_row`` and (for ``range = "fixed"``) ``low`` and ``high``, or ``ratio``
    instead of ``bits`` when it is set; each only where the compressor takes it (``accepted``).
    """
    params: dict[str, Any] = {"bits": bits, "per_row": link.per_row}
    if link.range == "fixed":
        params |= {"low": link.low, "high": link.high}
    if link.ratio > 0 and "ratio" in accepted:
        del params["bits"]
        params["ratio"] = link.ratio
    return {name: value for name, value in params.items() if name in accepted}


def check_compressor(link: CompressorConfig, path: str) -> None:
    """Build the link's registered compressor at every ``b`` it uses, as the run will.

    Raises:
        FieldError: naming ``path.bits`` (``path.steps`` for a steps schedule) or the
            parameter the compressor rejects.
    """
    from vfl.compress.registry import COMPRESSORS, make_compressor

    cls = COMPRESSORS[link.name]
    accepted = {field.name for field in dataclasses.fields(cls)}  # type: ignore[arg-type]
    from_steps = link.schedule == "steps"
    for bits in sorted({b for _, b in link.steps}) if from_steps else [link.bits]:
        params = compressor_parameters(link, bits, accepted)
        try:
            make_compressor(link.name, **params)
        except ConfigError as error:
            blamed = next((name for name in params if str(error).startswith(name)), "name")
            key = "steps" if from_steps and blamed == "bits" else blamed
            message = f"the {link.name!r} compressor cannot be built: {error}"
            raise FieldError(f"{path}.{key}", message) from None


def check_bit_schedule(link: CompressorConfig, path: str) -> None:
    """Build the link's bit schedule (``steps`` or ``diminishing``; ``constant`` needs nothing).

    Raises:
        FieldError: naming ``path.steps`` or ``path.bits``.
    """
    if link.schedule == "constant":
        return
    from vfl.compress.registry import COMPRESSORS
    from vfl.compress.schedule import MAX_BITS, make_schedule

    params: dict[str, Any]
    if link.schedule == "steps":
        key, params = "steps", {"steps": tuple((r, b) for r, b in link.steps)}
    else:
        cap = getattr(COMPRESSORS[link.name], "max_bits", MAX_BITS)
        key, params = "bits", {"initial": link.bits, "max_bits": cap}
    try:
        make_schedule(link.schedule, **params)
    except ConfigError as error:
        message = f"the {link.schedule!r} bit schedule cannot be built: {error}"
        raise FieldError(f"{path}.{key}", message) from None


def check_ratio_schedule(schedule: RatioScheduleConfig) -> None:
    """Build an LVFL ratio schedule with ``vfl.prune.make_schedule``.

    Raises:
        FieldError: naming the key of the schedule's kind (``steps``, ``end_round``,
            ``values``), relative to the schedule's table.
    """
    from vfl.prune import make_schedule

    key = RATIO_KEYS.get(schedule.kind, "kind")
    try:
        make_schedule(schedule.spec(), name=key)
    except ConfigError as error:
        raise FieldError(key, str(error).removeprefix(f"{key}: ")) from None
