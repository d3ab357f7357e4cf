"""SecureBoost messages to vfl wire messages and back, every shape checked on the way in.

``to_wire`` flattens a ``vfl.boost.messages`` object into its ``vfl.boost.wire_messages`` form;
``from_wire`` rebuilds it and refuses, with a ``WireError`` naming the field, anything whose
sizes do not add up (a count that disagrees with the rows or bytes sent, a table of the wrong
shape). Whether the content makes sense (known nodes, rows in range, the key's ciphertext size)
is the receiving role's check.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import singledispatch

import numpy as np
import numpy.typing as npt
import torch

from vfl.boost import messages as bm
from vfl.boost import wire_messages as wm
from vfl.errors import WireError
from vfl.wire import Ack, Message

SETUP_ROUND = 0
"""The frame round of the key exchange and of prediction (training frames carry the tree)."""


@singledispatch
def to_wire(message: object) -> Message:
    """The wire form of a SecureBoost request or reply."""
    raise TypeError(f"{type(message).__name__} is not a SecureBoost message")


@to_wire.register
def _(message: bm.PaillierKey) -> Message:
    return wm.BoostKeyAnnounce(SETUP_ROUND, message.modulus)


@to_wire.register
def _(message: bm.BinLayout) -> Message:
    return wm.BoostBinLayout(SETUP_ROUND, _table(list(message.bins)))


@to_wire.register
def _(message: bm.EncryptedGradients) -> Message:
    values = message.values
    return wm.BoostGradients(message.tree, message.slot_bits, values.width, values.data)


@to_wire.register
def _(message: bm.Ack) -> Message:
    return Ack(message.tree)


@to_wire.register
def _(message: bm.HistogramRequest) -> Message:
    nodes = [(n.node, n.parent, n.sibling, len(n.rows)) for n in message.nodes]
    rows = _concat([n.rows for n in message.nodes])
    return wm.BoostHistogramRequest(message.tree, _table(nodes, 4), torch.from_numpy(rows))


@to_wire.register
def _(message: bm.HistogramReply) -> Message:
    widths = {h.values.width for h in message.histograms}
    if len(widths) > 1:
        raise WireError(f"a histogram reply mixes ciphertext widths {sorted(widths)}")
    nodes = [(h.node, h.values.count) for h in message.histograms]
    data = b"".join(h.values.data for h in message.histograms)
    return wm.BoostHistogramReply(
        message.tree, _table(nodes, 2), widths.pop() if widths else 0, data
    )


@to_wire.register
def _(message: bm.SplitRequest) -> Message:
    orders = [(o.node, o.column, o.bin, int(o.missing_left)) for o in message.orders]
    return wm.BoostSplitRequest(message.tree, _table(orders, 4))


@to_wire.register
def _(message: bm.SplitReply) -> Message:
    results = [(r.node, r.record, len(r.left)) for r in message.results]
    bits = _pack_bits([r.left for r in message.results])
    return wm.BoostSplitReply(message.tree, _table(results, 3), bits)


@to_wire.register
def _(message: bm.RouteRequest) -> Message:
    queries = [(q.record, len(q.rows)) for q in message.queries]
    rows = _concat([q.rows for q in message.queries])
    return wm.BoostRouteRequest(
        SETUP_ROUND, message.table, _table(queries, 2), torch.from_numpy(rows)
    )


@to_wire.register
def _(message: bm.RouteReply) -> Message:
    counts = [len(mask) for mask in message.left]
    return wm.BoostRouteReply(SETUP_ROUND, _table(counts), _pack_bits(list(message.left)))


def from_wire(message: Message) -> bm.Request | bm.Reply:
    """The SecureBoost message a wire message carries.

    Raises:
        WireError: if it is no SecureBoost message or its counts and sizes do not add up.
    """
    if isinstance(message, wm.BoostKeyAnnounce):
        return bm.PaillierKey(message.modulus)
    if isinstance(message, wm.BoostBinLayout):
        return bm.BinLayout(tuple(_read_table(message.bins, "bins", 1)[:, 0].tolist()))
    if isinstance(message, wm.BoostGradients):
        return bm.EncryptedGradients(
            message.round, message.slot_bits, _ciphertexts(message.width, message.ciphertexts)
        )
    if isinstance(message, Ack):
        return bm.Ack(message.round)
    if isinstance(message, wm.BoostHistogramRequest):
        return _histogram_request(message)
    if isinstance(message, wm.BoostHistogramReply):
        return _histogram_reply(message)
    if isinstance(message, wm.BoostSplitRequest):
        orders = _read_table(message.orders, "orders", 4)
        return bm.SplitRequest(
            message.round, tuple(bm.SplitOrder(n, c, b, bool(m)) for n, c, b, m in orders.tolist())
        )
    if isinstance(message, wm.BoostSplitReply):
        return _split_reply(message)
    if isinstance(message, wm.BoostRouteRequest):
        return _route_request(message)
    if isinstance(message, wm.BoostRouteReply):
        counts = _read_table(message.counts, "counts", 1)[:, 0]
        return bm.RouteReply(tuple(_unpack_bits(message.left, counts.tolist(), "left")))
    raise WireError(f"{type(message).__name__} is not a SecureBoost message")


def _histogram_request(message: wm.BoostHistogramRequest) -> bm.HistogramRequest:
    nodes = _read_table(message.nodes, "nodes", 4)
    groups = _split_rows(message.rows, nodes[:, 3], "nodes")
    return bm.HistogramRequest(
        message.round,
        tuple(
            bm.NodeRows(node, rows, parent, sibling)
            for (node, parent, sibling, _), rows in zip(nodes.tolist(), groups, strict=True)
        ),
    )


def _histogram_reply(message: wm.BoostHistogramReply) -> bm.HistogramReply:
    nodes = _read_table(message.nodes, "nodes", 2)
    counts = nodes[:, 1]
    if (counts < 0).any() or int(counts.sum()) * message.width != len(message.ciphertexts):
        raise WireError(
            f"a histogram reply counts {int(counts.sum())} ciphertexts of {message.width} bytes"
            f" but carries {len(message.ciphertexts)} bytes"
        )
    histograms, start = [], 0
    for node, count in nodes.tolist():
        end = start + count * message.width
        data = message.ciphertexts[start:end]
        histograms.append(bm.NodeHistogram(node, _ciphertexts(message.width, data)))
        start = end
    return bm.HistogramReply(message.round, tuple(histograms))


def _split_reply(message: wm.BoostSplitReply) -> bm.SplitReply:
    results = _read_table(message.results, "results", 3)
    masks = _unpack_bits(message.left, results[:, 2].tolist(), "left")
    return bm.SplitReply(
        message.round,
        tuple(
            bm.SplitResult(node, record, mask)
            for (node, record, _), mask in zip(results.tolist(), masks, strict=True)
        ),
    )


def _route_request(message: wm.BoostRouteRequest) -> bm.RouteRequest:
    queries = _read_table(message.queries, "queries", 2)
    groups = _split_rows(message.rows, queries[:, 1], "queries")
    return bm.RouteRequest(
        message.table,
        tuple(
            bm.RouteQuery(record, rows)
            for (record, _), rows in zip(queries.tolist(), groups, strict=True)
        ),
    )


def _ciphertexts(width: int, data: bytes) -> bm.Ciphertexts:
    if width < 1 and data:
        raise WireError(f"ciphertext width must be at least 1 byte, got {width}")
    if width and len(data) % width:
        raise WireError(f"{len(data)} bytes are not a whole number of {width}-byte ciphertexts")
    return bm.Ciphertexts(width, data)


def _table(rows: Sequence[Sequence[int]] | Sequence[int], columns: int = 1) -> torch.Tensor:
    array = np.asarray(rows, dtype=np.int64).reshape(-1, columns)
    return torch.from_numpy(array if columns > 1 else array[:, 0].copy())


def _read_table(value: torch.Tensor, field: str, columns: int) -> npt.NDArray[np.int64]:
    """An ``int64`` table of ``columns`` columns (a 1-D tensor when ``columns`` is 1)."""
    ndim = 1 if columns == 1 else 2
    if (
        value.dtype != torch.int64
        or value.ndim != ndim
        or (ndim == 2 and value.shape[1] != columns)
    ):
        shape = "(K,)" if ndim == 1 else f"(K, {columns})"
        raise WireError(
            f"field {field!r} must be an int64 tensor of shape {shape}, got {value.dtype}"
            f" of shape {tuple(value.shape)}"
        )
    array: npt.NDArray[np.int64] = value.numpy().reshape(-1, columns)
    return array


def _split_rows(
    rows: torch.Tensor, counts: npt.NDArray[np.int64], field: str
) -> list[npt.NDArray[np.int64]]:
    flat = rows.numpy()
    if (counts < 0).any() or int(counts.sum()) != len(flat):
        raise WireError(
            f"field {field!r} counts {int(counts.sum())} rows but {len(flat)} rows were sent"
        )
    return [part.copy() for part in np.split(flat, np.cumsum(counts)[:-1])] if len(counts) else []


def _concat(parts: Sequence[npt.NDArray[np.int64]]) -> npt.NDArray[np.int64]:
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.int64)


def _pack_bits(masks: Sequence[npt.NDArray[np.bool_]]) -> bytes:
    if not masks:
        return b""
    return np.packbits(np.concatenate([np.asarray(m, dtype=bool) for m in masks])).tobytes()


def _unpack_bits(data: bytes, counts: Sequence[int], field: str) -> list[npt.NDArray[np.bool_]]:
    total = sum(counts)
    if min(counts, default=0) < 0 or len(data) != -(-total // 8):
        raise WireError(
            f"field {field!r} must carry {total} bits in {-(-total // 8)} bytes, got"
            f" {len(data)} bytes"
        )
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8), count=total).astype(bool)
    return list(np.split(bits, np.cumsum(counts)[:-1])) if counts else []
