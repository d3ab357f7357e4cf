"""Value ranges of the quantizers: a fixed ``[low, high]`` or a per-message range header.

A quantizer maps its range onto ``[0, 1]``. With a fixed range (for example ``[-1, 1]`` for tanh
embeddings) nothing travels and values outside are clipped; with a per-message range the
message's own minimum and maximum travel first, as two little-endian float32 (8 bytes).
"""

from __future__ import annotations

import math
import struct
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from vfl.errors import ConfigError, WireError

Array = npt.NDArray[np.float32]
Floats = npt.NDArray[np.float64]


class Span(NamedTuple):
    """The value range a quantizer maps onto ``[0, 1]``: ``low`` and ``width = high - low``."""

    low: float
    width: float

    def to_unit(self, values: Array) -> Floats:
        """Clip to the range and scale to ``[0, 1]`` (a zero width maps everything to 0)."""
        unit: Floats = (values.astype(np.float64) - self.low) / (self.width or 1.0)
        return np.clip(unit, 0.0, 1.0)

    def from_unit(self, unit: Floats) -> Floats:
        """Inverse of ``to_unit`` (inside the range)."""
        values: Floats = self.low + self.width * unit
        return values

    def overshoot(self, values: Array) -> Floats:
        """Distance of each value from the range (0 inside): the clipping error."""
        high = self.low + self.width
        flat = values.astype(np.float64).reshape(-1)
        gap: Floats = np.maximum(self.low - flat, 0.0) + np.maximum(flat - high, 0.0)
        return gap


RANGE_HEADER = struct.Struct("<ff")
"""A per-message range: float32 minimum, float32 maximum (8 bytes, little-endian)."""


def check_range(low: float | None, high: float | None) -> None:
    """Validate a fixed range ``(low, high)`` or the per-message mode ``(None, None)``.

    Raises:
        ConfigError: if only one bound is given, a bound is not finite, or ``low >= high``.
    """
    if (low is None) != (high is None):
        raise ConfigError(
            f"give both low and high (a fixed range) or neither (a per-message range), got"
            f" low={low!r}, high={high!r}"
        )
    for bound in (low, high):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int | float)):
            raise ConfigError(f"range bounds must be numbers, got {bound!r}")
    if (
        low is not None
        and high is not None
        and not (math.isfinite(low) and math.isfinite(high) and low < high)
    ):
        raise ConfigError(f"the range must be finite with low < high, got [{low}, {high}]")


def span_of(values: Array, low: float | None, high: float | None) -> tuple[Span, bytes]:
    """The span to quantize ``values`` in, and the header that tells it to the receiver."""
    if low is not None and high is not None:
        return Span(float(low), float(high) - float(low)), b""
    lo, hi = np.float32(values.min()), np.float32(values.max())
    return Span(float(lo), float(hi) - float(lo)), RANGE_HEADER.pack(lo, hi)


def read_span(
    payload: memoryview, low: float | None, high: float | None
) -> tuple[Span, memoryview]:
    """The span of a received payload, and the payload after its header.

    Raises:
        WireError: if a per-message range is not finite or its minimum exceeds its maximum.
    """
    if low is not None and high is not None:
        return Span(float(low), float(high) - float(low)), payload
    lo, hi = RANGE_HEADER.unpack(payload[: RANGE_HEADER.size])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        raise WireError(f"invalid per-message range [{lo}, {hi}]: need finite min <= max")
    return Span(lo, hi - lo), payload[RANGE_HEADER.size :]
