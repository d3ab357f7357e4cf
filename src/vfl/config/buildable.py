"""Build what a config section describes once, so that what cannot be built fails at load time.

A compressor, its bit schedule and a ratio schedule are built by the registries the run uses
(``vfl.compress.registry``, ``vfl.schedules``); their ``ConfigError`` is re-raised as a
``FieldError`` naming the config key. The compressor registry imports torch, so it is imported
here lazily: callers (``vfl.config.rules``) call these only for settings other than the
defaults.
"""

from __future__ import annotations

from typing import Any

from vfl.config.io import FieldError
from vfl.config.stages import CompressorConfig, RatioScheduleConfig
from vfl.errors import ConfigError
from vfl.schedules import SCHEDULES, bit_schedule, ratio_schedule

NO_COMPRESSOR = "none"
"""The compressor name for plain float32 tensors (no compressor in the registry)."""


def registered_compressors() -> tuple[str, ...]:
    """``none`` and every name in the compressor registry."""
    from vfl.compress.registry import available_compressors

    return (NO_COMPRESSOR, *available_compressors())


def compressor_parameters(link: CompressorConfig, bits: int) -> dict[str, Any]:
    """The registry parameters of a link's compressor at ``bits`` bits per component.

    ``bits``, ``per_row`` and (for ``range = "fixed"``) ``low`` and ``high``, or ``ratio``
    instead of ``bits`` when it is set; each only where the compressor takes it (its registered
    parameters).
    """
    from vfl.compress.registry import parameters

    accepted = parameters(link.name)
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
    from vfl.compress.registry import make_compressor

    from_steps = "steps" in SCHEDULES[link.schedule].bit_keys
    for bits in sorted({b for _, b in link.steps}) if from_steps else [link.bits]:
        params = compressor_parameters(link, bits)
        try:
            make_compressor(link.name, **params)
        except ConfigError as error:
            blamed = next((name for name in params if str(error).startswith(name)), "name")
            key = "steps" if from_steps and blamed == "bits" else blamed
            message = f"the {link.name!r} compressor cannot be built: {error}"
            raise FieldError(f"{path}.{key}", message) from None


def check_bit_schedule(link: CompressorConfig, path: str) -> None:
    """Build the link's bit schedule as the run will (a constant one needs nothing).

    Raises:
        FieldError: naming the key the schedule reads (``path.steps`` or ``path.bits``).
    """
    kind = SCHEDULES[link.schedule]
    if kind.constant:
        return
    from vfl.compress.registry import COMPRESSORS

    cap = COMPRESSORS[link.name].max_bits
    try:
        bit_schedule(link.schedule, bits=link.bits, steps=link.steps, max_bits=cap)
    except ConfigError as error:
        key = _blamed(str(error), kind.bit_keys)
        message = f"the {link.schedule!r} bit schedule cannot be built: {error}"
        raise FieldError(f"{path}.{key}", message) from None


def check_ratio_schedule(schedule: RatioScheduleConfig) -> None:
    """Build an LVFL ratio schedule with ``vfl.schedules.ratio_schedule``.

    Raises:
        FieldError: naming the key of the schedule that it refuses (``steps``, ``end_round``,
            ``values``...), relative to the schedule's table.
    """
    keys = SCHEDULES[schedule.kind].ratio_keys
    try:
        ratio_schedule(schedule.spec(), name="")
    except ConfigError as error:
        detail = str(error).removeprefix(": ")
        raise FieldError(_blamed(detail, keys), detail) from None


def _blamed(message: str, keys: tuple[str, ...]) -> str:
    """The key an error message starts with, else the last key the schedule reads."""
    return next((key for key in keys if message.startswith(key)), keys[-1] if keys else "kind")
