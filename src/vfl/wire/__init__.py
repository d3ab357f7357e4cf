"""The single wire codec: typed messages to bytes and back (no pickle)."""

from vfl.wire.codec import HEADER_SIZE, Frame, decode, encode
from vfl.wire.messages import (
    SPLIT_TEST,
    SPLIT_TRAIN,
    Ack,
    CompressedEmbedReply,
    CompressedGradRequest,
    EmbedReply,
    EmbedRequest,
    EvalRequest,
    GradRequest,
    RefreshRequest,
    Shutdown,
    ViewBroadcast,
)
from vfl.wire.schema import SERVER_ID, Message, kind_name, register

__all__ = [
    "HEADER_SIZE",
    "SERVER_ID",
    "SPLIT_TEST",
    "SPLIT_TRAIN",
    "Ack",
    "CompressedEmbedReply",
    "CompressedGradRequest",
    "EmbedReply",
    "EmbedRequest",
    "EvalRequest",
    "Frame",
    "GradRequest",
    "Message",
    "RefreshRequest",
    "Shutdown",
    "ViewBroadcast",
    "decode",
    "encode",
    "kind_name",
    "register",
]
