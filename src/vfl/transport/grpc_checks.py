"""What a valid reply to each request is: its types, and the sizes and shapes it must have.

The gRPC transport checks every decoded reply against the rule of the request it answers
before it settles that request (after the frame, sender and round checks of
``vfl.transport.base.check_reply``). A reply that breaks the rule is rejected like a malformed
frame: the reason is logged and the request keeps waiting, so one bad message never ends a run;
a party that keeps sending bad replies fails the request once its attempts are used up.

The rules mirror the replies the protocol loops accept (``vfl.protocol``). Requests defined
outside the transport (the deployment's control messages) register theirs with ``expect``; a
request without a rule gets the generic checks only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from vfl.errors import WireError
from vfl.wire import (
    Ack,
    CompressedEmbedReply,
    CompressedGradRequest,
    EmbedReply,
    EmbedRequest,
    EvalRequest,
    GradRequest,
    Message,
    RefreshRequest,
    Shutdown,
    ViewBroadcast,
)
from vfl.wire.checks import all_finite
from vfl.wire.messages import (
    MaskedCounts,
    PackedCounts,
    PublicKeyAnnounce,
    PublicKeyDirectory,
    SecAggSetup,
)

ReplyCheck = Callable[[Message, Message], None]
"""``check(request, reply)``: raise ``WireError`` naming what is wrong with the reply."""

PUBLIC_KEY_BYTES = 32


@dataclass(frozen=True)
class ReplyRule:
    """The valid replies to one request type.

    Attributes:
        replies: The reply types accepted.
        check: Further checks of sizes and shapes, if any.
    """

    replies: tuple[type[Message], ...]
    check: ReplyCheck | None = None


_RULES: dict[type[Message], ReplyRule] = {}


def expect(
    request: type[Message], *replies: type[Message], check: ReplyCheck | None = None
) -> None:
    """Register the replies valid for ``request`` (replacing an earlier rule for it)."""
    if not replies:
        raise ValueError(f"name at least one valid reply type for {request.__name__}")
    _RULES[request] = ReplyRule(tuple(replies), check)


def rule_for(request: type[Message]) -> ReplyRule | None:
    """The registered rule of a request type, if any."""
    return _RULES.get(request)


def check_reply_content(request: Message, reply: Message) -> None:
    """Check that ``reply`` is a valid answer to ``request``: its type, sizes and shapes.

    Raises:
        WireError: naming the request, the reply and what is wrong.
    """
    if isinstance(reply, EmbedReply):
        _check_embedding(request, reply)
    rule = _RULES.get(type(request))
    if rule is None:
        return
    if not isinstance(reply, rule.replies):
        valid = ", ".join(t.__name__ for t in rule.replies)
        raise WireError(
            f"{type(reply).__name__} is not a valid reply to {type(request).__name__}"
            f" (valid: {valid})"
        )
    if rule.check is not None:
        rule.check(request, reply)


def _check_embedding(request: Message, reply: EmbedReply) -> None:
    embedding = reply.embedding
    if embedding.ndim != 2 or not torch.is_floating_point(embedding):
        raise WireError(
            f"an embedding must be a 2-D floating point tensor (batch, width), got"
            f" {embedding.dtype} of shape {tuple(embedding.shape)}"
        )
    ids = getattr(request, "ids", None)
    if isinstance(ids, torch.Tensor) and embedding.shape[0] != ids.shape[0]:
        raise WireError(
            f"an embedding of {embedding.shape[0]} rows answers a request for {ids.shape[0]}"
            " samples"
        )
    if not all_finite(embedding):
        raise WireError("an embedding holds non-finite values")


def _check_public_key(request: Message, reply: Message) -> None:
    assert isinstance(reply, PublicKeyAnnounce)
    if len(reply.public_key) != PUBLIC_KEY_BYTES:
        raise WireError(
            f"a public key must be {PUBLIC_KEY_BYTES} bytes, got {len(reply.public_key)}"
        )


expect(EmbedRequest, EmbedReply, CompressedEmbedReply, MaskedCounts, PackedCounts)
expect(RefreshRequest, EmbedReply, CompressedEmbedReply)
expect(EvalRequest, EmbedReply, MaskedCounts)
for _request in (GradRequest, CompressedGradRequest, ViewBroadcast, PublicKeyDirectory, Shutdown):
    expect(_request, Ack)
expect(SecAggSetup, PublicKeyAnnounce, check=_check_public_key)
