"""The compressor interface: stateless ``compress`` / ``decompress`` with a real wire encoding.

A compressor turns a float tensor of shape ``(B, P)`` (embeddings, one row per sample) or ``(N,)``
(a flat vector such as the server model's parameters) into a ``Compressed`` record whose
``payload`` is exactly the bytes that travel. The receiver already knows the compressor, its
parameters, the shape and the dither seed (from the config and the message), so the payload
carries no schema; ``docs/compression.md`` gives every layout byte by byte.

Inputs are converted to float32 first; error bounds are stated against that float32 tensor, as
the squared Frobenius norm of ``decompress(compress(x)) - x``: the per-message compression error
``ℰ_m`` of C-VFL [ICML] Definition 4.1.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt
import torch

from vfl.compress.ranges import RANGE_HEADER, Span, check_range, span_of
from vfl.errors import ConfigError, WireError
from vfl.schedules import check_int

Array = npt.NDArray[np.float32]
Floats = npt.NDArray[np.float64]
Codes = npt.NDArray[np.int64]
Shape = tuple[int, ...]

FLOAT32_ROUNDING = 2.0**-24
"""Relative rounding error of float32 (half an ulp): the slack quantizers add to their bounds."""


@dataclass(frozen=True)
class Compressed:
    """One compressed tensor: what travels, and the size it states.

    Attributes:
        shape: The original shape, ``(B, P)`` or ``(N,)``. Known to the receiver; not sent.
        payload: The bytes that travel: exactly ``encoded_size(shape)`` bytes.
        bits: The stated size in bits, header included; ``len(payload) == ceil(bits / 8)``.
    """

    shape: Shape
    payload: bytes
    bits: int

    def to_bytes(self) -> bytes:
        """The payload, for a ``bytes`` message field (the inverse of ``Compressor.from_bytes``)."""
        return self.payload


class Compressor(ABC):
    """A stateless compressor ``C_m`` of C-VFL [ICML] section 3, with its wire encoding.

    Subclasses are frozen dataclasses with keyword-only numeric parameters, validated when built.
    Class-level tags (in the spirit of scikit-learn's estimator tags) tell generic code and the
    contract tests what to expect.

    Attributes:
        name: The registry name (``make_compressor(name, ...)``).
        unbiased: Whether ``E[decompress(compress(x))] = x`` over the dither for every input in
            the compressor's range.
        dithered: Whether the result depends on ``seed`` (subtractive dither).
        selects: Whether ``scores`` steer the result (top-k selection): it then sparsifies, and
            ``select = "gradient"`` applies to it.
        lossless: Whether the payload is the float32 values themselves (nothing to gain from
            encoding kept values with it, and the paper counts 32 bits per component).
        max_bits: The most bits per component it supports (caps a diminishing bit schedule).
    """

    name: ClassVar[str]
    unbiased: ClassVar[bool]
    dithered: ClassVar[bool] = False
    selects: ClassVar[bool] = False
    lossless: ClassVar[bool] = False
    max_bits: ClassVar[int] = 32

    def compress(
        self, x: torch.Tensor, *, seed: int, scores: torch.Tensor | None = None
    ) -> Compressed:
        """Compress ``x`` (shape ``(B, P)`` or ``(N,)``).

        Args:
            x: A finite floating-point tensor.
            seed: Drives the subtractive dither; the receiver must use the same value. Derive it
                per round, party and purpose (``vfl.seeding.derive_seed``): it costs no bytes.
            scores: For selecting compressors (top-k): the selection key; ignored by the others.

        Raises:
            ConfigError: if ``x`` is not a non-empty finite float tensor of 1 or 2 dimensions, or
                ``seed`` is not a non-negative integer.
        """
        values = as_float32(x)
        check_seed(seed)
        shape: Shape = tuple(values.shape)
        payload = self._encode(values, seed=seed, scores=scores)
        assert len(payload) == self.encoded_size(shape), "encoder broke its stated size"
        return Compressed(shape, payload, self.message_bits(shape))

    def decompress(self, c: Compressed, *, seed: int) -> torch.Tensor:
        """The float32 reconstruction of the original shape.

        Raises:
            WireError: if the payload is not exactly ``encoded_size(c.shape)`` bytes or its
                content is invalid (a range header that is not finite, a code out of range).
        """
        check_seed(seed)
        shape = check_shape(c.shape)
        self._check_length(c.payload, shape)
        values = self._decode(memoryview(c.payload), shape, seed=seed)
        return torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32).reshape(shape))

    def from_bytes(self, data: bytes | memoryview, shape: Sequence[int]) -> Compressed:
        """The record for a received payload of a tensor of ``shape`` (checks the length only).

        Raises:
            WireError: if ``data`` is not exactly ``encoded_size(shape)`` bytes.
        """
        checked = check_shape(shape)
        self._check_length(data, checked)
        return Compressed(checked, bytes(data), self.message_bits(checked))

    def encoded_size(self, shape: Sequence[int]) -> int:
        """Payload bytes for a tensor of ``shape``, header included: ``ceil(message_bits / 8)``."""
        return -(-self.message_bits(shape) // 8)

    @abstractmethod
    def message_bits(self, shape: Sequence[int]) -> int:
        """The stated size in bits of the message for ``shape``, header included."""

    @abstractmethod
    def paper_bits(self, shape: Sequence[int]) -> int:
        """The paper's nominal accounting (C-VFL [ICML] section 4): a cross-check only.

        b bits per component, no headers, and for top-k the kept values only (indices free).
        Never the payload size; that is ``message_bits``.
        """

    @abstractmethod
    def error_bound(self, x: torch.Tensor, *, scores: torch.Tensor | None = None) -> float:
        """A bound on ``||decompress(compress(x)) - x||²`` that holds for every seed."""

    @abstractmethod
    def _encode(self, values: Array, *, seed: int, scores: torch.Tensor | None) -> bytes: ...

    @abstractmethod
    def _decode(self, payload: memoryview, shape: Shape, *, seed: int) -> Floats | Array: ...

    def _check_length(self, data: bytes | memoryview, shape: Shape) -> None:
        expected = self.encoded_size(shape)
        if len(data) != expected:
            raise WireError(
                f"{self.name} payload for shape {shape} must be {expected} bytes, got {len(data)}"
            )


def as_float32(x: torch.Tensor) -> Array:
    """``x`` as a float32 numpy array, detached (a view of ``x`` when it already is one: read-only).

    Raises:
        ConfigError: if ``x`` is not a non-empty, finite, floating-point tensor of 1 or 2 dims.
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        kind = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
        raise ConfigError(f"x must be a floating-point torch.Tensor, got {kind}")
    check_shape(tuple(x.shape))
    values: Array = x.detach().to(device="cpu", dtype=torch.float32).numpy()
    if not np.isfinite(values).all():
        raise ConfigError("x must be finite; it holds NaN or infinite values")
    return values


def check_shape(shape: Sequence[int]) -> Shape:
    """``shape`` as a tuple, if it is ``(B, P)`` or ``(N,)`` with positive sizes.

    Raises:
        ConfigError: otherwise.
    """
    dims = tuple(int(d) for d in shape)
    if len(dims) not in (1, 2) or min(dims) < 1:
        raise ConfigError(f"shape must be (B, P) or (N,) with positive sizes, got {dims}")
    return dims


def check_seed(seed: int) -> None:
    """Raise ``ConfigError`` unless ``seed`` is a non-negative integer."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")


def rows_of(shape: Shape) -> tuple[int, int]:
    """``(B, P)`` for a 2-D shape; a flat vector ``(N,)`` is one row: ``(1, N)``."""
    return (shape[0], shape[1]) if len(shape) == 2 else (1, shape[0])


@dataclass(frozen=True, kw_only=True)
class Quantizer(Compressor):
    """A quantizer with ``2**bits`` levels per component over a value range, dithered.

    Range handling, by parameter: a fixed range ``[low, high]`` (for example ``[-1, 1]`` for
    tanh embeddings; values outside are clipped, and the clipping distance adds to the error), or
    ``low = high = None`` for a per-message range: the message's own minimum and maximum travel as
    two float32 in an 8-byte header.

    Attributes:
        bits: Bits per component ``b``.
        low: Lower end of the fixed range, or ``None`` for a per-message range.
        high: Upper end of the fixed range, or ``None`` for a per-message range.
    """

    max_bits: ClassVar[int] = 16
    dithered: ClassVar[bool] = True

    bits: int
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        check_int("bits", self.bits, 1, self.max_bits)
        check_range(self.low, self.high)

    @property
    def header_bits(self) -> int:
        """Bits of the range header: 64 for a per-message range, 0 for a fixed one."""
        return 0 if self.low is not None else 8 * RANGE_HEADER.size

    def span(self, x: torch.Tensor) -> Span:
        """The span ``x`` is quantized in (the fixed range, or ``x``'s own min and max)."""
        return span_of(as_float32(x), self.low, self.high)[0]

    @abstractmethod
    def codes(self, c: Compressed) -> Codes:
        """The integer codes a payload carries (for consumers of integers: PBM, secure sums).

        Raises:
            WireError: if the payload is malformed.
        """

    def _rounding_slack(self, span: Span, reach: float) -> float:
        """Per-component bound on float32 rounding of outputs within ``reach`` of the range."""
        magnitude = max(abs(span.low), abs(span.low + span.width)) + reach
        return 2.0 * FLOAT32_ROUNDING * magnitude
