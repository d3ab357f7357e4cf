"""VFL with labels private to the server: split learning, C-VFL Algorithm 2, FedBCD-p.

Each round: the server picks the batch's sample ids; every party embeds its block of those rows
and uploads the embedding (compressed with C_m when configured); the server fuses the
embeddings, computes the loss, and returns d loss / d embedding to each party (compressed when
configured), computed at the embeddings it received. Every role then takes Q local steps on the
round's batch (FedBCD-p): the server on the stale embeddings, each party by back-propagating the
stale gradient through its current model. Q = 1 without compression is plain split learning.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from vfl.protocol.loop import ServerLoop
from vfl.wire import (
    Ack,
    ActiveBlockRequest,
    CompressedEmbedReply,
    CompressedGradRequest,
    EmbedReply,
    GradRequest,
    Message,
    RefreshRequest,
)
from vfl.wire.seeds import SeedLabel


class SplitLearning(ServerLoop):
    """The server-side loop with labels private to the server (parallel schedule).

    With an active party (``LoopOptions.active_party``, FedBCD's party K in the label holder's
    process) the head belongs to that party's block: the server sends the passive parties their
    gradients at the synchronization point, and the active party takes its block's exact Q steps
    (its bottom and the head) on the passive parties' stale embeddings.
    """

    name = "split"

    def exchange(self, ids: torch.Tensor) -> float:
        """One exchange on the batch ``ids`` and Q local steps; returns the first-step loss."""
        r = self.rounds
        replies = self.request_embeddings(ids, (EmbedReply, CompressedEmbedReply))
        embeddings = self.decode_embeddings(replies, len(ids))
        active = self.options.active_party
        if active:
            loss, grads = self.server.sync_gradients(ids, embeddings)
            del grads[active]
        else:
            loss, grads = self.server.train_step(ids, embeddings, self.options.steps)
        noised = self.noised_gradients(grads)
        self.send_gradients({p: self.gradient_message(r, p, g) for p, g in noised.items()})
        if active:
            self.active_block_steps(embeddings)
        return loss

    def active_block_steps(self, embeddings: dict[int, torch.Tensor]) -> None:
        """The active party's exact steps on the other parties' ``embeddings`` of this round."""
        active = self.options.active_party
        others = tuple(embeddings[p] for p in self.server.party_ids if p != active)
        request = ActiveBlockRequest(round=self.rounds, others=others)
        self.ask({active: request}, Ack, "train")

    def noised_gradients(self, grads: Mapping[int, torch.Tensor]) -> dict[int, torch.Tensor]:
        """Each party's gradient as it leaves the label holder: clipped and noised, if set.

        Every party's row gets a noise draw of its own, in party order, even where the rows are
        equal (a sum or mean head): the accountant counts one release per party and epoch
        (``label_releases``), what a coalition of them can pool.
        """
        noise = self.options.gradient_noise
        if noise is None:
            return dict(grads)
        return {party: noise.apply(grad.cpu()) for party, grad in grads.items()}

    def gradient_message(self, round_: int, party: int, grad: torch.Tensor) -> Message:
        """The d loss / d embedding message for one party (compressed, if set).

        The gradient crosses to the host here, once (if noise has not already brought it there):
        codec and wire work on that copy.
        """
        grad = grad.cpu()
        codec = self.options.codecs.gradient
        if codec is None:
            return GradRequest(round=round_, grad=grad)
        seed = self.options.seeds.for_message(SeedLabel.GRADIENT, round_, party)
        payload = codec.encode(grad, seed=seed, round_=round_)
        return CompressedGradRequest(round=round_, payload=payload)


class SequentialSplitLearning(SplitLearning):
    """FedBCD-s with labels private to the server: parties update one after another.

    Liu et al.'s Algorithm 3 (FedBCD, "A Communication-Efficient Collaborative Learning Framework
    for Distributed Features", Section 5) is ambiguous about when embeddings are exchanged. Our
    reading, per round on batch S: every party uploads its embedding of S; then, party by party in
    id order, the server computes that party's d loss / d H from the freshest embeddings it holds,
    the party takes its Q steps, and re-sends its updated embedding of S (the paper's
    Exchange({k, K})), so later parties and the server see its update; the server (party K, the
    label holder) takes its Q steps last. With an active party, party K's block is that party's
    bottom and the head: it takes its exact steps last, on the freshest embeddings of the others.
    """

    name = "sequential"

    def exchange(self, ids: torch.Tensor) -> float:
        """One sequential round; returns the loss of the server's first step."""
        r = self.rounds
        replies = self.request_embeddings(ids, (EmbedReply, CompressedEmbedReply))
        view = self.decode_embeddings(replies, len(ids))
        active = self.options.active_party
        for party in (p for p in self.server.party_ids if p != active):
            grad = self.noised_gradients({party: self.server.input_gradients(ids, view)[party]})[
                party
            ]
            self.ask({party: self.gradient_message(r, party, grad)}, Ack, "train")
            refreshed = self.ask(
                {party: RefreshRequest(round=r)}, (EmbedReply, CompressedEmbedReply), "train"
            )
            view.update(self.decode_embeddings(refreshed, len(ids), SeedLabel.REFRESH))
        if not active:
            loss, _ = self.server.train_step(ids, view, self.options.steps)
            return loss
        loss = self.server.sync_gradients(ids, view)[0]  # the active block's first-step loss
        self.active_block_steps(view)
        return loss
