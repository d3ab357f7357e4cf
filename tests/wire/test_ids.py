"""Row ids travel bit-packed at the width of the largest id: compact and exactly reversible."""

from __future__ import annotations

import struct

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.errors import WireError
from vfl.wire import EmbedRequest, decode, encode
from vfl.wire.fields import Chunks, IdsField, Reader

IDS = st.lists(st.integers(0, 2**40), max_size=300).map(
    lambda values: torch.tensor(values, dtype=torch.int64)
)


@settings(deadline=None)  # the first compiled call loads the packing loops
@given(ids=IDS)
def test_ids_survive_the_round_trip(ids: torch.Tensor) -> None:
    # Execute
    frame = decode(encode(EmbedRequest(round=3, ids=ids), sender=0))

    # Assert
    assert isinstance(frame.message, EmbedRequest)
    assert frame.message.ids.dtype == torch.int64
    assert torch.equal(frame.message.ids, ids)


@settings(deadline=None)  # the first compiled call loads the packing loops
@given(count=st.integers(1, 512), largest=st.integers(1, 2**20))
def test_an_id_costs_the_bits_of_the_largest_id(count: int, largest: int) -> None:
    # Prepare
    ids = torch.full((count,), largest, dtype=torch.int64)
    out: Chunks = []

    # Execute
    IdsField().encode(ids, out)

    # Assert: 4-byte count, 1-byte width, then ceil(count * width / 8) bytes
    width = largest.bit_length()
    assert len(b"".join(out)) == 5 + -(-count * width // 8)


def test_a_batch_of_mnist_ids_is_a_quarter_of_its_int64_size() -> None:
    # Prepare: ids from a 60,000-row split take 16 bits, not 64
    ids = torch.randperm(60_000)[:128]

    # Execute
    size = len(encode(EmbedRequest(round=0, ids=ids), sender=0))

    # Assert
    assert size <= 10 + 5 + 128 * 16 // 8


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (torch.tensor([1, -2]), "non-negative"),
        (torch.tensor([[1, 2]]), "1-D int64"),
        (torch.tensor([1.0, 2.0]), "1-D int64"),
    ],
)
def test_ids_that_cannot_be_sent_are_refused(value: torch.Tensor, reason: str) -> None:
    with pytest.raises(WireError, match=reason):
        IdsField().encode(value, [])


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (struct.pack("<IB", 3, 0), "width 0 bits is invalid"),
        (struct.pack("<IB", 3, 64), "width 64 bits is invalid"),
        (struct.pack("<IB", 1000, 8) + b"\x01" * 10, "need 1000 bytes, only 10 remain"),
    ],
)
def test_malformed_ids_are_refused_with_the_reason(payload: bytes, reason: str) -> None:
    with pytest.raises(WireError, match=reason):
        IdsField().decode(Reader(memoryview(payload)))


@pytest.mark.parametrize("step", [3, 0])  # a strided view, and one id repeated by expand
def test_ids_from_a_view_are_sent_as_their_values(step: int) -> None:
    # Prepare: 10-bit ids (the compiled packer's path where numba is installed)
    base = torch.arange(0, 1200, dtype=torch.int64)
    ids = base[::3][:100] if step else base[599:600].expand(100)
    assert not ids.is_contiguous()

    # Execute
    sent = encode(EmbedRequest(round=1, ids=ids), sender=0)

    # Assert: the bytes of the same values held contiguously, and they come back
    assert sent == encode(EmbedRequest(round=1, ids=ids.contiguous()), sender=0)
    decoded = decode(sent).message
    assert isinstance(decoded, EmbedRequest)
    assert torch.equal(decoded.ids, ids)
