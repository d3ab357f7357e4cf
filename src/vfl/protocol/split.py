"""VFL with labels private to the server: split learning, C-VFL Algorithm 2, FedBCD-p.

Each round: the server picks the batch's sample ids; every party embeds its block of those rows
and uploads the embedding (compressed with C_m when configured); the server fuses the
embeddings, computes the loss, and returns d loss / d embedding to each party (compressed when
configured), computed at the embeddings it received. Every role then takes Q local steps on the
round's batch (FedBCD-p): the server on the stale embeddings, each party by back-propagating the
stale gradient through its current model. Q = 1 without compression is plain split learning.
"""

from __future__ import annotations

import torch

from vfl.protocol.loop import ServerLoop
from vfl.wire import (
    Ack,
    CompressedEmbedReply,
    CompressedGradRequest,
    EmbedReply,
    EmbedRequest,
    GradRequest,
    Message,
)


class SplitLearning(ServerLoop):
    """The server-side loop with labels private to the server (parallel schedule)."""

    def train_round(self, ids: torch.Tensor) -> float:
        """One exchange on the batch ``ids`` and Q local steps; returns the first-step loss."""
        r = self.rounds
        parties = self.server.party_ids
        replies = self.ask(
            {p: EmbedRequest(round=r, ids=ids) for p in parties},
            (EmbedReply, CompressedEmbedReply),
            "train",
        )
        embeddings = self.decode_embeddings(replies, len(ids))
        loss, grads = self.server.train_step(ids, embeddings, self.options.steps)
        self.ask({p: self.gradient_message(r, p, g) for p, g in grads.items()}, Ack, "train")
        return loss

    def gradient_message(self, round_: int, party: int, grad: torch.Tensor) -> Message:
        """The d loss / d embedding message for one party (compressed with a gradient codec)."""
        codec = self.options.links.gradient
        if codec is None:
            return GradRequest(round=round_, grad=grad)
        seed = self.options.seeds.for_message("gradient", round_, party)
        payload = codec.encode(grad, seed=seed, round_=round_)
        return CompressedGradRequest(round=round_, payload=payload)
