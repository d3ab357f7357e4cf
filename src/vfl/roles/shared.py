"""What a party holds when labels are shared (C-VFL Algorithm 1): labels, a head replica, views.

Every round the server broadcasts every party's stale compressed embedding and the compressed
server model; a party decodes the others' embeddings (``decode_view``) and loads the server model
into its replica (``load_vector``), then takes its local steps against that stale view.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from vfl.compress.pipeline import MessageSeeds, TensorCodec
from vfl.errors import WireError
from vfl.results.metrics import Task
from vfl.wire import ViewBroadcast


@dataclass
class SharedLabels:
    """What a party holds when labels are shared (C-VFL Algorithm 1).

    Attributes:
        labels: The training labels, ``(N,)``.
        task: The task (loss).
        head: A replica of the server model, refreshed from each round's broadcast.
        widths: Every party's embedding width, by party id (to decode the broadcast).
        embeddings: Decodes the other parties' embedding payloads.
        server_model: Decodes the flattened server model.
    """

    labels: torch.Tensor
    task: Task
    head: nn.Module
    widths: dict[int, int]
    embeddings: TensorCodec
    server_model: TensorCodec


def decode_view(
    shared: SharedLabels, broadcast: ViewBroadcast, seeds: MessageSeeds, *, batch: int, own: int
) -> list[torch.Tensor | None]:
    """The stale embeddings of every party in a broadcast (``None`` in this party's place)."""
    if len(broadcast.embeddings) != len(shared.widths):
        raise WireError(
            f"view holds {len(broadcast.embeddings)} embeddings for {len(shared.widths)} parties"
        )
    view: list[torch.Tensor | None] = []
    for (party, width), payload in zip(shared.widths.items(), broadcast.embeddings, strict=True):
        if party == own:
            view.append(None)
            continue
        seed = seeds.for_message("embedding", broadcast.round, party)
        view.append(
            shared.embeddings.decode(
                payload, shape=(batch, width), seed=seed, round_=broadcast.round
            )
        )
    return view


def load_vector(
    module: nn.Module, codec: TensorCodec, payload: bytes, seed: int, round_: int
) -> None:
    """Overwrite ``module``'s parameters with a decoded flat parameter vector."""
    count = sum(p.numel() for p in module.parameters())
    if count == 0:
        if payload:
            raise WireError(f"a server model without parameters came with {len(payload)} bytes")
        return
    vector = codec.decode(payload, shape=(count,), seed=seed, round_=round_)
    with torch.no_grad():
        nn.utils.vector_to_parameters(vector, module.parameters())
