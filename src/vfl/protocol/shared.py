"""C-VFL Algorithm 1: labels shared, Q local iterations on stale compressed views.

Castiglia et al., "Compressed-VFL" (ICML 2022), Section 3, Algorithm 1. Every round:

1. the server picks the batch; every party uploads C_m(h_m(theta_m; X_m^B));
2. the server forms Phi_hat = {C_0(theta_0), C_1(H_1), ..., C_M(H_M)} and sends it to every party
   (each party's own compressed embedding included, as the paper's cost model counts it; the
   payloads are forwarded as received, so no embedding is compressed twice);
3. every party takes Q steps with its own FRESH embedding, the others' stale compressed ones and
   the stale compressed server model; the server takes Q steps on theta_0 with the stale
   compressed embeddings. All roles use the round's batch for all Q steps.
"""

from __future__ import annotations

import torch

from vfl.errors import ConfigError
from vfl.protocol.loop import ServerLoop
from vfl.wire import Ack, CompressedEmbedReply, ViewBroadcast
from vfl.wire.seeds import SeedLabel


class SharedLabelsTraining(ServerLoop):
    """The server-side loop of C-VFL Algorithm 1 (parallel local iterations)."""

    name = "shared_labels"

    def exchange(self, ids: torch.Tensor) -> float:
        """One round: uploads, the broadcast of the stale view, Q steps everywhere."""
        codecs = self.options.codecs
        if codecs.embedding is None or codecs.server_model is None:
            raise ConfigError("shared labels need an embedding codec and a server-model codec")
        r = self.rounds
        parties = self.server.party_ids
        replies = self.request_embeddings(ids, CompressedEmbedReply)
        embeddings = self.decode_embeddings(replies, len(ids))
        seed = self.options.seeds.for_message(SeedLabel.SERVER_MODEL, r, 0)
        vector = self.server.parameter_vector()
        model_payload = (
            b"" if vector.numel() == 0 else codecs.server_model.encode(vector, seed=seed, round_=r)
        )  # a head without parameters (top = "none") has no model to send
        broadcast = ViewBroadcast(
            round=r,
            embeddings=tuple(replies[p].payload for p in parties),
            server_model=model_payload,
        )
        self.ask(dict.fromkeys(parties, broadcast), Ack, "train")
        loss, _ = self.server.train_step(ids, embeddings, self.options.steps)
        return loss
