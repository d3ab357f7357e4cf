"""SecureBoost's messages on vfl's wire: exact round trips, real sizes, the ledger's counts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.boost.helpers import TEST_KEY_BITS, short_keys, vertical_table
from vfl.boost import BoostParams, train_secureboost
from vfl.boost import messages as bm
from vfl.boost import wire_messages as wm
from vfl.boost.codec import from_wire, to_wire
from vfl.boost.link import TransportLink, passive_endpoint
from vfl.boost.passive import PassiveBooster
from vfl.errors import ProtocolError, WireError
from vfl.transport.base import PartyEndpoint
from vfl.transport.inproc import InProcTransport
from vfl.wire import Message, decode, encode
from vfl.wire.frames import HEADER_SIZE


def through_the_wire(message: bm.Request | bm.Reply) -> bm.Request | bm.Reply:
    return from_wire(decode(encode(to_wire(message), sender=0)).message)


def assert_same(left: object, right: object) -> None:
    """Dataclasses equal field by field, arrays by value and dtype."""
    if isinstance(left, np.ndarray):
        assert isinstance(right, np.ndarray)
        assert left.dtype == right.dtype
        np.testing.assert_array_equal(left, right)
    elif dataclasses.is_dataclass(left):
        assert type(left) is type(right)
        for field in dataclasses.fields(left):
            assert_same(getattr(left, field.name), getattr(right, field.name))
    elif isinstance(left, tuple):
        assert isinstance(right, tuple) and len(left) == len(right)
        for a, b in zip(left, right, strict=True):
            assert_same(a, b)
    else:
        assert left == right


row_sets = st.lists(
    st.lists(st.integers(0, 100_000), max_size=40, unique=True).map(
        lambda rows: np.array(sorted(rows), dtype=np.int64)
    ),
    max_size=5,
)


@settings(max_examples=40)
@given(groups=row_sets, tree=st.integers(0, 1000), seed=st.integers(0, 2**32 - 1))
def test_every_message_round_trips_exactly(groups: list[np.ndarray], tree: int, seed: int) -> None:
    # Prepare: one message of each type built from the same row sets
    rng = np.random.default_rng(seed)
    width = short_keys().public.ciphertext_size
    masks = [rng.random(len(rows)) < 0.5 for rows in groups]
    blob = bm.Ciphertexts(width, rng.bytes(width * 3))
    messages: list[bm.Request | bm.Reply] = [
        bm.PaillierKey(short_keys().public.to_bytes()),
        bm.BinLayout(tuple(int(k) for k in rng.integers(1, 40, size=len(groups)))),
        bm.EncryptedGradients(tree, 107, blob),
        bm.Ack(tree),
        bm.HistogramRequest(
            tree,
            tuple(bm.NodeRows(2 * i + 1, rows, i, 2 * i + 2) for i, rows in enumerate(groups)),
        ),
        bm.HistogramReply(tree, tuple(bm.NodeHistogram(i, blob) for i in range(len(groups)))),
        bm.SplitRequest(tree, tuple(bm.SplitOrder(i, i % 3, i % 5, i % 2 == 0) for i in range(4))),
        bm.SplitReply(tree, tuple(bm.SplitResult(i, i + 7, mask) for i, mask in enumerate(masks))),
        bm.RouteRequest("test", tuple(bm.RouteQuery(i, rows) for i, rows in enumerate(groups))),
        bm.RouteReply(tuple(masks)),
    ]

    # Execute / Assert
    for message in messages:
        assert_same(through_the_wire(message), message)


def test_a_ciphertext_message_is_its_ciphertexts_plus_a_fixed_header() -> None:
    # Prepare
    key = short_keys().public
    rows = 37
    values = bm.Ciphertexts(key.ciphertext_size, key.encode([key.encrypt_zero()] * rows))

    # Execute
    frame = encode(to_wire(bm.EncryptedGradients(3, 107, values)), sender=0)

    # Assert: header, slot_bits and width (i64 each), the u32 length, then the ciphertexts
    assert len(frame) == HEADER_SIZE + 8 + 8 + 4 + rows * key.ciphertext_size
    assert key.ciphertext_size == 2 * TEST_KEY_BITS // 8


def test_the_ledger_counts_each_tree_s_encoded_frames() -> None:
    # Prepare
    labels, blocks = vertical_table(50, (1, 2, 1), seed=7)
    params = BoostParams(num_trees=2, max_depth=2, max_bin=4)

    # Execute
    run = train_secureboost(
        labels, blocks, params, key_bits=TEST_KEY_BITS, insecure_test_key=True, workers=1
    )

    # Assert: each holder's gradient frame is the encoded size of that tree's message, and the
    # per-tree totals are the ledger's rows of that tree
    ledger = run.link.transport.ledger
    size = run.active.keys.public.ciphertext_size
    gradient_frame = HEADER_SIZE + 8 + 8 + 4 + len(labels) * size
    for report in run.reports:
        for party in (2, 3):
            counted = ledger.total(round=report.tree, party=party, kind="BoostGradients")
            assert counted == gradient_frame
        assert report.bytes_down == ledger.total(phase="train", round=report.tree, direction="down")
        assert report.bytes_down > 2 * gradient_frame
        assert report.bytes_up > 0
    assert ledger.messages(phase="setup", kind="BoostKeyAnnounce") == 2


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (
            wm.BoostHistogramRequest(0, torch.zeros((1, 4), dtype=torch.int64), torch.arange(3)),
            "field 'nodes' counts 0 rows but 3 rows were sent",
        ),
        (
            wm.BoostHistogramRequest(0, torch.zeros((1, 3), dtype=torch.int64), torch.arange(0)),
            r"field 'nodes' must be an int64 tensor of shape \(K, 4\), got torch.int64 of shape"
            r" \(1, 3\)",
        ),
        (
            wm.BoostHistogramReply(0, torch.tensor([[0, 2]]), 128, b"\x01" * 128),
            "counts 2 ciphertexts of 128 bytes but carries 128 bytes",
        ),
        (
            wm.BoostGradients(0, 107, 128, b"\x01" * 200),
            "200 bytes are not a whole number of 128-byte ciphertexts",
        ),
        (
            wm.BoostRouteReply(0, torch.tensor([9]), b"\x00"),
            "field 'left' must carry 9 bits in 2 bytes, got 1 bytes",
        ),
        (
            wm.BoostSplitRequest(0, torch.zeros(4, dtype=torch.float32)),
            "field 'orders' must be an int64 tensor",
        ),
    ],
)
def test_messages_whose_sizes_do_not_add_up_are_refused(message: Message, error: str) -> None:
    # Prepare: the frame itself is well formed
    frame = decode(encode(message, sender=0)).message

    # Execute / Assert
    with pytest.raises(WireError, match=error):
        from_wire(frame)


def holder_transport(endpoint: PartyEndpoint) -> TransportLink:
    return TransportLink(InProcTransport({2: endpoint}))


def test_a_reply_from_another_sender_is_refused() -> None:
    # Prepare: party 2's endpoint signs its replies as party 5
    _, blocks = vertical_table(10, (1, 1), seed=0)
    endpoint = passive_endpoint(PassiveBooster(2, blocks[2], max_bin=4, insecure_test_key=True))
    endpoint.encode_reply = lambda reply: encode(reply, sender=5)  # type: ignore[method-assign]
    link = holder_transport(endpoint)

    # Execute / Assert
    with pytest.raises(ProtocolError, match="party 2 failed: reply to party 2's request claims"):
        link.request({2: bm.PaillierKey(short_keys().public.to_bytes())})


def test_a_request_to_an_unknown_holder_is_refused() -> None:
    # Prepare
    _, blocks = vertical_table(10, (1, 1), seed=0)
    link = holder_transport(
        passive_endpoint(PassiveBooster(2, blocks[2], max_bin=4, insecure_test_key=True))
    )

    # Execute / Assert
    with pytest.raises(ProtocolError, match=r"no passive holder 4; this link reaches \[2\]"):
        link.request({4: bm.PaillierKey(short_keys().public.to_bytes())})


def test_a_holder_given_a_reply_refuses_it() -> None:
    # Prepare
    _, blocks = vertical_table(10, (1, 1), seed=0)
    endpoint = passive_endpoint(PassiveBooster(2, blocks[2], max_bin=4, insecure_test_key=True))

    # Execute / Assert
    with pytest.raises(ProtocolError, match="party 2 got a BinLayout, which is a reply"):
        endpoint.handler(to_wire(bm.BinLayout((3,))))
