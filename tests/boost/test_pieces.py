"""Requests over the frame limit travel in pieces and arrive whole; broken pieces are refused."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.boost.pieces import BoostPart, PieceAssembler, part_overhead, pieces
from vfl.boost.wire_messages import BoostGradients
from vfl.errors import WireError
from vfl.wire import encode
from vfl.wire.schema import SERVER_ID


@settings(max_examples=60, deadline=None)
@given(
    data=st.binary(min_size=0, max_size=3000),
    limit=st.integers(min_value=80, max_value=4000),
    tree=st.integers(0, 50),
)
def test_pieces_put_together_give_the_frame_back(data: bytes, limit: int, tree: int) -> None:
    # Prepare
    message = BoostGradients(tree, 53, 8, data)
    frame = encode(message, sender=SERVER_ID)
    assembler = PieceAssembler(2)

    # Execute
    sent = pieces(message, limit)
    whole = [assembler.add(part, len(frame)) for part in sent if isinstance(part, BoostPart)]

    # Assert
    assert all(len(encode(m, sender=SERVER_ID)) <= limit for m in sent)
    if len(frame) <= limit:
        assert sent == [message]  # a frame that fits is sent as it is
    else:
        assert whole[:-1] == [None] * (len(sent) - 1)
        assert whole[-1] == frame


def cut(size: int = 1000, limit: int = 300) -> tuple[bytes, list[BoostPart]]:
    message = BoostGradients(3, 53, 8, bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    parts = [p for p in pieces(message, limit) if isinstance(p, BoostPart)]
    assert len(parts) > 2
    return encode(message, sender=SERVER_ID), parts


def test_a_piece_out_of_order_drops_the_request() -> None:
    # Prepare
    frame, parts = cut()
    assembler = PieceAssembler(2)
    assembler.add(parts[0], len(frame))

    # Execute / Assert
    with pytest.raises(WireError, match=r"piece 2 of .* does not continue"):
        assembler.add(parts[2], len(frame))
    with pytest.raises(WireError, match=r"piece 1 of .* \(expected piece 0"):
        assembler.add(parts[1], len(frame))  # the request was dropped: only a new one may start
    wholes = [assembler.add(part, len(frame)) for part in parts]
    assert wholes[-1] == frame  # a new request in pieces goes through


def test_a_request_over_the_holders_bound_is_refused_at_its_first_piece() -> None:
    # Prepare
    frame, parts = cut()

    # Execute / Assert
    with pytest.raises(WireError, match=f"announces {len(frame)} bytes; this holder accepts"):
        PieceAssembler(2).add(parts[0], len(frame) - 1)
    assert PieceAssembler(2).add(parts[0], len(frame)) is None  # negative control


def test_pieces_that_carry_more_or_less_than_announced_are_refused() -> None:
    # Prepare
    frame, parts = cut()
    padded = BoostPart(parts[-1].round, parts[-1].index, parts[-1].count, len(frame), b"extra")
    assembler = PieceAssembler(2)
    for part in parts[:-1]:
        assembler.add(part, len(frame))

    # Execute / Assert
    with pytest.raises(WireError, match="carry"):
        assembler.add(padded, len(frame))


def test_a_limit_without_room_for_data_is_refused() -> None:
    # Prepare
    message = BoostGradients(0, 53, 8, b"\x00" * 100)

    # Execute / Assert
    with pytest.raises(ValueError, match="no room"):
        pieces(message, part_overhead(0))
