"""LVFL upload sparsification: exact kept fraction, magnitude order, wire layout, bad payloads."""

from __future__ import annotations

import math
import struct

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.compress.compressor_codec import CompressorCodec
from vfl.compress.scalar import ScalarQuantizer
from vfl.compress.sparsify import BITMAP, DENSE, INDICES, SparsifyingCodec, kept_entries
from vfl.errors import ConfigError, WireError


def codec(ratio: float, inner: CompressorCodec | None = None) -> SparsifyingCodec:
    return SparsifyingCodec(lambda _round: ratio, inner=inner)


def roundtrip(c: SparsifyingCodec, x: torch.Tensor) -> tuple[bytes, torch.Tensor]:
    payload = c.encode(x, seed=3, round_=0)
    return payload, SparsifyingCodec(inner=None).decode(
        payload, shape=tuple(x.shape), seed=3, round_=0
    )


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 9),
    cols=st.integers(1, 17),
    ratio=st.floats(0.0, 0.95),
    seed=st.integers(0, 2**16),
)
def test_keeps_exactly_the_configured_fraction_of_largest_magnitudes(
    rows: int, cols: int, ratio: float, seed: int
) -> None:
    # Prepare
    x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed))
    total = rows * cols

    # Execute
    _, decoded = roundtrip(codec(ratio), x)

    # Assert
    kept = decoded != 0
    assert int(kept.sum()) == total - math.floor(ratio * total + 1e-9)
    assert torch.equal(decoded[kept], x[kept])
    if kept.any() and (~kept).any():
        assert x[~kept].abs().max() <= x[kept].abs().min()


def test_decimal_ratios_behave_as_written() -> None:
    # Execute / Assert
    assert kept_entries(10, 0.3) == 7
    assert kept_entries(100, 0.07) == 93
    assert kept_entries(8, 0.0) == 8


def test_ratio_outside_zero_one_is_refused() -> None:
    # Execute / Assert
    with pytest.raises(ConfigError, match=r"\[0, 1\)"):
        kept_entries(10, 1.0)


@pytest.mark.parametrize(("ratio", "layout"), [(0.0, DENSE), (0.5, BITMAP), (0.99, INDICES)])
def test_sender_picks_the_smaller_position_layout(ratio: float, layout: int) -> None:
    # Prepare
    x = torch.randn(64, 32, generator=torch.Generator().manual_seed(0))

    # Execute
    payload, decoded = roundtrip(codec(ratio), x)

    # Assert
    kept, sent_layout = struct.unpack_from("<IB", payload)
    assert sent_layout == layout
    assert int((decoded != 0).sum()) == kept


def test_payload_is_values_plus_positions_and_shrinks_with_beta() -> None:
    # Prepare
    x = torch.randn(128, 64, generator=torch.Generator().manual_seed(1))

    # Execute
    dense, _ = roundtrip(codec(0.0), x)
    half, _ = roundtrip(codec(0.5), x)

    # Assert: 5-byte header, then a 1-bit map and 4096 float32 values
    assert len(dense) == 5 + 4 * 128 * 64
    assert len(half) == 5 + 128 * 64 // 8 + 4 * 4096
    assert len(half) / len(dense) < 0.57


def test_kept_values_can_be_quantized() -> None:
    # Prepare
    inner = CompressorCodec(ScalarQuantizer(bits=8))
    x = torch.randn(32, 16, generator=torch.Generator().manual_seed(2))
    sparse = codec(0.6, inner=inner)

    # Execute
    payload = sparse.encode(x, seed=5, round_=4)
    decoded = SparsifyingCodec(inner=inner).decode(payload, shape=(32, 16), seed=5, round_=4)

    # Assert
    kept = decoded != 0
    assert int(kept.sum()) == kept_entries(512, 0.6)
    assert (decoded[kept] - x[kept]).abs().max() < 0.05
    assert len(payload) < 5 + 512 // 8 + kept_entries(512, 0.6) + 16


def test_schedule_is_followed_round_by_round() -> None:
    # Prepare
    sparse = SparsifyingCodec(lambda round_: 0.25 if round_ < 2 else 0.75)
    x = torch.randn(4, 10, generator=torch.Generator().manual_seed(3))
    decoder = SparsifyingCodec()

    # Execute
    counts = [
        int(
            (
                decoder.decode(sparse.encode(x, seed=0, round_=r), shape=(4, 10), seed=0, round_=r)
                != 0
            ).sum()
        )
        for r in range(4)
    ]

    # Assert
    assert counts == [30, 30, 10, 10]


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        (b"\x01", "shorter than its header"),
        (struct.pack("<IB", 50, BITMAP), "keeps 50 entries"),
        (struct.pack("<IB", 3, 7) + b"\x00" * 20, "unknown sparse position layout"),
        (struct.pack("<IB", 40, DENSE) + b"\x00" * 10, "need 160 bytes"),
        (struct.pack("<IB", 2, BITMAP) + b"\x07" + b"\x00" * 4 + b"\x00" * 8, "marks 3 entries"),
        (struct.pack("<IB", 2, BITMAP) + b"\x03", "positions need 5"),
    ],
)
def test_malformed_payloads_are_wire_errors(payload: bytes, match: str) -> None:
    # Execute / Assert
    with pytest.raises(WireError, match=match):
        SparsifyingCodec().decode(payload, shape=(4, 10), seed=0, round_=0)


def test_decode_only_codec_cannot_encode() -> None:
    # Execute / Assert
    with pytest.raises(ConfigError, match="only decodes"):
        SparsifyingCodec().encode(torch.ones(2, 2), seed=0, round_=0)
