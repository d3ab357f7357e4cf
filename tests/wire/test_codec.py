from __future__ import annotations

import contextlib
import struct

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.errors import WireError
from vfl.wire import (
    HEADER_SIZE,
    Ack,
    EmbedReply,
    EmbedRequest,
    EvalRequest,
    GradRequest,
    Shutdown,
    decode,
    encode,
)
from vfl.wire.fields import DTYPE_CODES

EMBEDDING_HEADER = 20  # frame header (10) + 2-D tensor header (2 + 2 * 4), as docs/wire.md states


@st.composite
def tensors(draw: st.DrawFn) -> torch.Tensor:
    dtype = draw(st.sampled_from(sorted(DTYPE_CODES, key=str)))
    shape = draw(st.lists(st.integers(0, 5), min_size=0, max_size=4))
    seed = draw(st.integers(0, 2**31 - 1))
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(shape, generator=generator) * 100
    if dtype == torch.bool:
        return values > 0
    return values.to(dtype)


@given(tensor=tensors(), round_=st.integers(0, 2**32 - 1), sender=st.integers(0, 2**16 - 1))
def test_tensor_messages_round_trip_exactly(tensor: torch.Tensor, round_: int, sender: int) -> None:
    # Prepare
    message = EmbedReply(round=round_, embedding=tensor)

    # Execute
    frame = decode(encode(message, sender=sender))

    # Assert
    assert frame.sender == sender
    assert isinstance(frame.message, EmbedReply)
    assert frame.message.round == round_
    decoded = frame.message.embedding
    assert decoded.dtype == tensor.dtype and decoded.shape == tensor.shape
    assert torch.equal(decoded.view(-1).view(torch.uint8), tensor.reshape(-1).view(torch.uint8))


@pytest.mark.parametrize(
    "message",
    [
        EmbedRequest(round=1, ids=torch.arange(7)),
        EmbedReply(round=2, embedding=torch.ones(3, 4)),
        GradRequest(round=3, grad=torch.zeros(3, 4)),
        Ack(round=4),
        EvalRequest(round=5, ids=torch.arange(3), split=1),
        Shutdown(round=6),
    ],
)
def test_every_message_type_round_trips(message: object) -> None:
    # Execute
    frame = decode(encode(message, sender=0))  # type: ignore[arg-type]

    # Assert
    assert type(frame.message) is type(message)
    for name, value in vars(message).items():
        decoded = getattr(frame.message, name)
        assert torch.equal(decoded, value) if isinstance(value, torch.Tensor) else decoded == value


@given(batch=st.integers(1, 300), width=st.integers(1, 300))
@settings(max_examples=30)
def test_float32_embedding_is_payload_plus_fixed_header(batch: int, width: int) -> None:
    # Prepare
    message = EmbedReply(round=9, embedding=torch.zeros(batch, width))

    # Execute
    size = len(encode(message, sender=1))

    # Assert
    assert size == batch * width * 4 + EMBEDDING_HEADER


def test_header_is_ten_bytes() -> None:
    assert HEADER_SIZE == 10
    assert len(encode(Ack(round=0), sender=1)) == HEADER_SIZE


def _valid() -> bytes:
    return encode(EmbedReply(round=1, embedding=torch.ones(2, 3)), sender=1)


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda b: b"XX" + b[2:], "bad magic"),
        (lambda b: b[:2] + bytes([99]) + b[3:], "unsupported wire version"),
        (lambda b: b[:3] + bytes([250]) + b[4:], "unknown message kind"),
        (lambda b: b[:-1], "truncated|needs"),
        (lambda b: b + b"\x00", "unexpected bytes"),
        (lambda b: b[:10] + bytes([77]) + b[11:], "unknown tensor dtype"),
        (lambda b: b[:11] + bytes([200]) + b[12:], "dims"),
        (lambda b: b[:12] + struct.pack("<I", 2**31) + b[16:], "needs"),
        (lambda b: b[:5], "shorter|truncated"),
    ],
)
def test_malformed_frames_are_rejected_with_a_reason(mutate: object, reason: str) -> None:
    # Prepare
    data = mutate(_valid())  # type: ignore[operator]

    # Execute / Assert
    with pytest.raises(WireError, match=reason):
        decode(data)


def test_oversized_frames_are_rejected_before_parsing() -> None:
    with pytest.raises(WireError, match="exceeds the limit"):
        decode(_valid(), max_bytes=16)


@given(data=st.binary(max_size=200))
def test_arbitrary_bytes_never_crash_the_decoder(data: bytes) -> None:
    with contextlib.suppress(WireError):
        decode(data)


@given(data=st.binary(min_size=1, max_size=64), cut=st.integers(0, 63))
def test_corrupted_valid_frames_raise_only_wire_errors(data: bytes, cut: int) -> None:
    # Prepare: splice random bytes into a valid frame
    frame = _valid()
    corrupted = frame[: cut % len(frame)] + data + frame[cut % len(frame) + len(data) :]

    # Execute / Assert
    with contextlib.suppress(WireError):
        decode(corrupted)


def test_unencodable_values_are_rejected() -> None:
    with pytest.raises(WireError, match="round"):
        encode(Ack(round=-1), sender=0)
    with pytest.raises(WireError, match="sender"):
        encode(Ack(round=0), sender=70000)
    with pytest.raises(WireError, match="dtype"):
        encode(EmbedReply(round=0, embedding=torch.zeros(2, dtype=torch.complex64)), sender=1)
