"""A misbehaving party: before every real reply it sends frames the server must reject.

``RogueLink`` is used in-process by the transport tests; ``python -m tests.deploy.rogue ARGS``
runs ``vfl ARGS`` (``party --config ...``) with every party link replaced by a ``RogueLink``, as
a real party process of a deployment.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from vfl.transport.chunks import Assembled, split_frame
from vfl.transport.grpc_party import PartyLink
from vfl.transport.party_answers import Answering
from vfl.transport.proto.vfl_pb2 import Chunk
from vfl.wire import Ack, EmbedReply, EmbedRequest, EvalRequest, decode, encode
from vfl.wire.frames import DEFAULT_MAX_BYTES

JUNK_REASONS = (
    "over the limit",  # a chunk announcing a frame larger than the server accepts
    "not a Chunk",  # bytes that are not a chunk at all
    "from sender",  # a frame claiming to come from another party
    "bad magic",  # a chunk whose frame is not a vfl frame
    "is not a valid reply to",  # a well-formed message of the wrong type
    "replied for round",  # a well-formed reply for another round
)
"""A phrase of the logged reason for each junk frame sent before every reply."""

EMBEDDING_REASONS = (
    "rows answers a request for",  # an embedding with the wrong number of rows
    "non-finite",  # an embedding holding NaN
)
"""Further junk before replies to embedding requests (well-formed, wrong shape or values)."""


class RogueAnswering(Answering):
    """Sends malformed, oversized, forged and ill-shaped frames before each real reply."""

    def _answer(self, item: Assembled) -> tuple[list[bytes], bool]:
        chunks, stop = super()._answer(item)
        return self._junk(item) + chunks, stop

    def _junk(self, item: Assembled) -> list[bytes]:
        request = decode(item.frame).message
        round_ = request.round
        me = self.party_id
        oversized = Chunk(
            message_id=item.message_id, index=0, count=1, total_bytes=DEFAULT_MAX_BYTES + 1
        ).SerializeToString()
        frames = [
            encode(Ack(round=round_), sender=me + 1),
            b"XY garbage frame",
            encode(EvalRequest(round=round_, ids=torch.arange(2), split=0), sender=me),
            encode(Ack(round=round_ + 1), sender=me),
        ]
        if isinstance(request, EmbedRequest | EvalRequest):
            rows = len(request.ids)
            frames += [
                encode(EmbedReply(round=round_, embedding=torch.zeros(rows + 1, 2)), sender=me),
                encode(
                    EmbedReply(round=round_, embedding=torch.full((rows, 2), torch.nan)), sender=me
                ),
            ]
        junk = [oversized, b"\xff\x00 not a chunk"]
        for frame in frames:
            junk += split_frame(item.message_id, frame, chunk_bytes=1024)
        return junk


class RogueLink(PartyLink):
    """A party link that answers through ``RogueAnswering``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        plain = self.answering
        self.answering = RogueAnswering(
            plain.party_id,
            plain.handler,
            plain.wire,
            max_bytes=plain.max_bytes,
            chunk_bytes=plain.chunk_bytes,
        )


def main() -> int:
    """``vfl ARGS`` with ``RogueLink`` in place of every party link."""
    import vfl.run.deployment
    from vfl.cli import main as vfl_main

    vfl.run.deployment.PartyLink = RogueLink  # type: ignore[attr-defined]  # the root's imported name
    return vfl_main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
