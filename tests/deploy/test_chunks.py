"""Chunking of frames and their checked reassembly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.errors import WireError
from vfl.transport.chunks import Assembled, Reassembler, parse_chunk, split_frame
from vfl.transport.proto.vfl_pb2 import Chunk


def chunk(message_id: int, index: int, count: int, total: int, data: bytes) -> Chunk:
    return Chunk(message_id=message_id, index=index, count=count, total_bytes=total, data=data)


@settings(max_examples=60, deadline=None)
@given(
    frames=st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=5),
    chunk_bytes=st.integers(1, 64),
)
def test_split_then_reassemble_gives_back_every_frame(
    frames: list[bytes], chunk_bytes: int
) -> None:
    # Prepare
    stream = [c for i, f in enumerate(frames) for c in split_frame(i, f, chunk_bytes=chunk_bytes)]
    reassembler = Reassembler(max_bytes=1000, chunk_bytes=chunk_bytes)

    # Execute
    out = [reassembler.add_serialized(raw) for raw in stream]

    # Assert
    assert [item for item in out if item is not None] == [
        Assembled(i, f) for i, f in enumerate(frames)
    ]
    assert len(stream) == sum(max(1, -(-len(f) // chunk_bytes)) for f in frames)


def test_a_message_announcing_more_than_the_limit_is_refused_before_buffering() -> None:
    # Prepare
    reassembler = Reassembler(max_bytes=100, chunk_bytes=10)

    # Execute / Assert
    with pytest.raises(WireError, match="announces 101 bytes, over the limit of 100"):
        reassembler.add(chunk(1, 0, 11, 101, b"x" * 10))


@pytest.mark.parametrize(
    ("chunks", "reason"),
    [
        ([chunk(1, 0, 2, 4, b"ab"), chunk(2, 0, 1, 1, b"c")], "interrupted"),
        ([chunk(1, 0, 2, 4, b"ab"), chunk(1, 2, 2, 4, b"cd")], "does not continue"),
        ([chunk(1, 1, 2, 4, b"cd")], "does not continue"),
        ([chunk(1, 0, 2, 4, b"abc"), chunk(1, 1, 2, 4, b"de")], "more than its announced"),
        ([chunk(1, 0, 2, 5, b"ab"), chunk(1, 1, 2, 5, b"cd")], "announced 5 bytes but carried 4"),
        ([chunk(1, 0, 9, 4, b"ab")], "claims 9 chunks"),
        ([chunk(1, 0, 1, 40, b"x" * 40)], "exceeds the chunk limit"),
    ],
)
def test_inconsistent_chunks_drop_their_message(chunks: list[Chunk], reason: str) -> None:
    # Prepare
    reassembler = Reassembler(max_bytes=100, chunk_bytes=32)

    # Execute / Assert
    with pytest.raises(WireError, match=reason):
        for item in chunks:
            reassembler.add(item)


def test_the_stream_goes_on_after_a_bad_chunk() -> None:
    # Prepare
    good = split_frame(5, b"hello", chunk_bytes=3)
    reassembler = Reassembler(max_bytes=100, chunk_bytes=3)

    # Execute
    with pytest.raises(WireError, match="bytes are not a Chunk"):
        reassembler.add_serialized(b"\xff\xff garbage")
    out = [reassembler.add_serialized(raw) for raw in good]

    # Assert
    assert out == [None, Assembled(5, b"hello")]


def test_a_serialized_chunk_larger_than_a_chunk_can_be_is_not_parsed() -> None:
    raw = chunk(1, 0, 1, 500, b"x" * 500).SerializeToString()
    with pytest.raises(WireError, match="exceeds the limit"):
        parse_chunk(raw, chunk_bytes=100)
